//! Units of measure: converting an entered quantity to its item's base unit, exactly.
//!
//! Conversions are declared two ways:
//!
//! - **per unit** (`/unit-measure`): a unit with `baseUnitMeasureId` and `factor` is `factor`
//!   of its base unit (`box`: 12 `each`; `kg`: 1000 `g`). Bases may have bases of their own
//!   (a chain of at most [`MAX_CHAIN`] steps), so `pallet` → `box` → `each` works.
//! - **per item** (`item.unitConversions`): `[{unitMeasureId, factor}]`, one `unitMeasureId` of
//!   this item is `factor` of the item's base unit (`item.unitMeasureId`). It wins over the
//!   unit's own declaration: a box of screws is 100, a box of bolts 12.
//!
//! [`factor_to_base`] finds the conversion of a unit to an item's base unit: walking the
//! entered unit's chain, the first unit on it that is the item's base unit, has a per-item
//! conversion, or lies on the base unit's own chain decides. A unit without a way there is
//! refused (the caller names the field). [`Factor::apply`] converts a quantity in exact decimal
//! arithmetic and rounds once, to the ledger's six decimals, half away from zero.

use std::collections::HashSet;
use std::str::FromStr;

use crate::openapi::ToSchema;
use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::violation::Violation;

/// The longest chain of `baseUnitMeasureId` steps a conversion follows (and a unit may have).
pub const MAX_CHAIN: usize = 8;

/// The largest factor of one declaration (one unit is at most this many of its base).
pub const MAX_FACTOR: f64 = 1_000_000_000.0;

/// A per-item conversion: one `unitMeasureId` of the item is `factor` of its base unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UnitConversion {
    /// The unit converted from.
    pub unit_measure_id: Uuid,
    /// How many of the item's base unit one `unitMeasureId` is (12 each to the box).
    #[schema(exclusive_minimum = 0, maximum = 1_000_000_000)]
    pub factor: f64,
}

/// What a unit of measure says about itself: its base unit and factor, if it declares one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnitDef {
    /// The unit this one is a multiple of.
    pub base: Option<Uuid>,
    /// How many `base` one of this unit is.
    pub factor: Option<f64>,
}

/// A conversion ratio to a base unit: `base = entered x num / den`, exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Factor {
    num: Decimal,
    den: Decimal,
}

/// A declared factor as an exact decimal (the shortest decimal that reads back as the number,
/// i.e. what was written: `0.1` is one tenth, not the nearest binary fraction).
pub fn decimal(value: f64) -> Option<Decimal> {
    if !value.is_finite() {
        return None;
    }
    Decimal::from_str(&value.to_string())
        .ok()
        .or_else(|| Decimal::from_scientific(&format!("{value:e}")).ok())
}

/// Checks one declared factor: positive, finite, at most [`MAX_FACTOR`], and a decimal of at
/// most 28 significant digits.
pub fn check_factor(field: &str, factor: f64) -> Result<(), Violation> {
    if !(factor.is_finite() && factor > 0.0 && factor <= MAX_FACTOR)
        || decimal(factor).is_none_or(|d| d.is_zero())
    {
        return Err(Violation::field(
            field,
            format!("a factor is a number above 0 and at most {MAX_FACTOR}"),
        ));
    }
    Ok(())
}

impl Factor {
    /// No conversion.
    pub const ONE: Factor = Factor {
        num: Decimal::ONE,
        den: Decimal::ONE,
    };

    fn times(self, factor: f64) -> Option<Factor> {
        Some(Factor {
            num: self.num.checked_mul(decimal(factor)?)?,
            den: self.den,
        })
    }

    fn over(self, other: Factor) -> Option<Factor> {
        Some(Factor {
            num: self.num.checked_mul(other.den)?,
            den: self.den.checked_mul(other.num)?,
        })
    }

    /// The conversion the other way: from the base unit to the entered one.
    pub fn inverse(self) -> Factor {
        Factor {
            num: self.den,
            den: self.num,
        }
    }

    /// Whether this is the identity.
    pub fn is_one(&self) -> bool {
        self.num == self.den
    }

    /// `quantity` (in the entered unit) in the base unit: `quantity x num / den`, computed in
    /// decimal and rounded once to six decimals, half away from zero. `None` when the result
    /// is beyond what a decimal holds (the caller refuses the quantity).
    pub fn apply(&self, quantity: f64) -> Option<f64> {
        if self.is_one() {
            return Some(quantity);
        }
        let q = decimal(quantity)?;
        let product = q.checked_mul(self.num)?;
        let exact = product.checked_div(self.den)?;
        let rounded = exact.round_dp_with_strategy(6, RoundingStrategy::MidpointAwayFromZero);
        let out: f64 = rounded.to_string().parse().ok()?;
        Some(if out == 0.0 { 0.0 } else { out })
    }
}

/// The chain of a unit: each unit on it with how many of it one `start` is.
fn chain(start: Uuid, units: &dyn Fn(Uuid) -> Option<UnitDef>) -> Vec<(Uuid, Factor)> {
    let mut out = vec![(start, Factor::ONE)];
    let mut seen: HashSet<Uuid> = [start].into();
    let (mut unit, mut factor) = (start, Factor::ONE);
    for _ in 0..MAX_CHAIN {
        let Some(UnitDef {
            base: Some(base),
            factor: Some(f),
        }) = units(unit)
        else {
            break;
        };
        let Some(next) = factor.times(f) else { break };
        if !seen.insert(base) {
            break;
        }
        out.push((base, next));
        (unit, factor) = (base, next);
    }
    out
}

/// The conversion of `entered` to the item's base unit `item_base`, given the item's own
/// conversions and the organization's units (`units(id)`: `None` for an unknown unit).
///
/// No entered unit, or the base unit itself, is [`Factor::ONE`]. Otherwise the entered unit's
/// chain is walked; the first unit on it that is the base unit, has a per-item conversion, or
/// lies on the base unit's chain gives the factor. `Err` says why there is none.
pub fn factor_to_base(
    entered: Option<Uuid>,
    item_base: Option<Uuid>,
    per_item: &[UnitConversion],
    units: &dyn Fn(Uuid) -> Option<UnitDef>,
) -> Result<Factor, String> {
    let Some(entered) = entered else {
        return Ok(Factor::ONE);
    };
    if Some(entered) == item_base {
        return Ok(Factor::ONE);
    }
    let overflow = || "the conversion is beyond the precision of a decimal".to_string();
    let base_chain = item_base.map(|b| chain(b, units)).unwrap_or_default();
    for (unit, to_unit) in chain(entered, units) {
        if Some(unit) == item_base {
            return Ok(to_unit);
        }
        if let Some(c) = per_item.iter().find(|c| c.unit_measure_id == unit) {
            return to_unit.times(c.factor).ok_or_else(overflow);
        }
        if let Some((_, base_to_unit)) = base_chain.iter().find(|(u, _)| *u == unit) {
            return to_unit.over(*base_to_unit).ok_or_else(overflow);
        }
    }
    Err(match item_base {
        None if units(entered).is_none() => {
            format!("no unit of measure {entered} in this organization")
        }
        None => format!(
            "the item has no unit of measure and no conversion for unit {entered}; give the item a unitMeasureId or a unitConversions entry"
        ),
        Some(base) if units(entered).is_none() => format!(
            "no unit of measure {entered} in this organization (the item's base unit is {base})"
        ),
        Some(base) => format!(
            "unit {entered} has no conversion to the item's base unit {base}: declare one on the unit (baseUnitMeasureId and factor) or on the item (unitConversions)"
        ),
    })
}

/// The rules of an item's `unitConversions`: each factor valid, one entry per unit, none for
/// the item's own base unit.
pub fn check_item_conversions(
    base: Option<Uuid>,
    conversions: &[UnitConversion],
    v: &mut Vec<Violation>,
) {
    let mut seen = HashSet::new();
    for (i, c) in conversions.iter().enumerate() {
        if let Err(e) = check_factor(&format!("unitConversions[{i}].factor"), c.factor) {
            v.push(e);
        }
        let field = format!("unitConversions[{i}].unitMeasureId");
        if Some(c.unit_measure_id) == base {
            v.push(Violation::field(
                field,
                "the item's own unit needs no conversion",
            ));
        } else if !seen.insert(c.unit_measure_id) {
            v.push(Violation::field(
                field,
                format!("unit {} is converted twice", c.unit_measure_id),
            ));
        }
    }
}

/// The rules of a unit's own declaration: `baseUnitMeasureId` and `factor` together, a valid
/// factor, not its own base.
pub fn check_unit_declaration(
    id: Uuid,
    base: Option<Uuid>,
    factor: Option<f64>,
    v: &mut Vec<Violation>,
) {
    match (base, factor) {
        (None, None) => {}
        (Some(_), None) => v.push(Violation::field(
            "factor",
            "a unit with a baseUnitMeasureId needs a factor (how many of the base one of it is)",
        )),
        (None, Some(_)) => v.push(Violation::field(
            "baseUnitMeasureId",
            "a factor needs the baseUnitMeasureId it converts to",
        )),
        (Some(base), Some(factor)) => {
            if let Err(e) = check_factor("factor", factor) {
                v.push(e);
            }
            if base == id {
                v.push(Violation::field(
                    "baseUnitMeasureId",
                    "a unit cannot be its own base",
                ));
            }
        }
    }
}

/// Whether declaring `base` as the base of `unit` keeps chains acyclic and at most
/// [`MAX_CHAIN`] long, given the other units (`units`). `Err` says why not.
pub fn check_chain(
    unit: Uuid,
    base: Uuid,
    units: &dyn Fn(Uuid) -> Option<UnitDef>,
) -> Result<(), String> {
    let mut current = base;
    for _ in 0..MAX_CHAIN {
        if current == unit {
            return Err(format!(
                "unit {base} converts back to this unit: conversions cannot form a cycle"
            ));
        }
        match units(current).and_then(|d| d.base) {
            Some(next) => current = next,
            None => return Ok(()),
        }
    }
    Err(format!(
        "a chain of base units is at most {MAX_CHAIN} steps long"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn u(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    /// each (1), box (2) = 12 each, pallet (3) = 40 box, g (4), kg (5) = 1000 g, dozen (6) = 12 each.
    fn org() -> HashMap<Uuid, UnitDef> {
        let def = |base: Option<u128>, factor: Option<f64>| UnitDef {
            base: base.map(u),
            factor,
        };
        HashMap::from([
            (u(1), def(None, None)),
            (u(2), def(Some(1), Some(12.0))),
            (u(3), def(Some(2), Some(40.0))),
            (u(4), def(None, None)),
            (u(5), def(Some(4), Some(1000.0))),
            (u(6), def(Some(1), Some(12.0))),
        ])
    }

    fn convert(
        q: f64,
        entered: u128,
        base: Option<u128>,
        per_item: &[UnitConversion],
    ) -> Result<f64, String> {
        let units = org();
        let f = factor_to_base(Some(u(entered)), base.map(u), per_item, &|id| {
            units.get(&id).copied()
        })?;
        f.apply(q).ok_or_else(|| "overflow".into())
    }

    #[test]
    fn per_unit_chains_convert_both_ways() {
        assert_eq!(convert(2.0, 2, Some(1), &[]), Ok(24.0));
        assert_eq!(convert(1.0, 3, Some(1), &[]), Ok(480.0));
        // each to box: 1/12, rounded once to six decimals.
        assert_eq!(convert(1.0, 1, Some(2), &[]), Ok(0.083333));
        assert_eq!(convert(6.0, 1, Some(2), &[]), Ok(0.5));
        // dozen and box share a root: 1 dozen = 1 box.
        assert_eq!(convert(3.0, 6, Some(2), &[]), Ok(3.0));
        assert_eq!(convert(0.1, 5, Some(4), &[]), Ok(100.0));
        assert_eq!(convert(250.0, 4, Some(5), &[]), Ok(0.25));
    }

    #[test]
    fn the_inverse_takes_a_base_quantity_back_to_the_entered_unit() {
        let units = org();
        let box_to_each =
            factor_to_base(Some(u(2)), Some(u(1)), &[], &|id| units.get(&id).copied()).unwrap();
        assert_eq!(box_to_each.apply(2.0), Some(24.0));
        assert_eq!(box_to_each.inverse().apply(24.0), Some(2.0));
        // One serial of a box of 12: a twelfth, rounded once.
        assert_eq!(box_to_each.inverse().apply(1.0), Some(0.083333));
        assert_eq!(Factor::ONE.inverse(), Factor::ONE);
    }

    proptest! {
        #[test]
        fn the_inverse_undoes_the_factor_within_rounding(micros in 0i64..1_000_000_000_000) {
            let units = org();
            let q = micros as f64 / 1e6;
            let pallet_to_each = factor_to_base(Some(u(3)), Some(u(1)), &[], &|id| units.get(&id).copied())
                .unwrap();
            // Base quantities are whole micro-units of "each"; a pallet (480 each) back and forth.
            let there = pallet_to_each.apply(q).unwrap();
            let back = pallet_to_each.inverse().apply(there).unwrap();
            prop_assert!((back - q).abs() <= 1e-6 + 1e-12 * q.abs(), "{q} -> {there} -> {back}");
        }
    }

    #[test]
    fn unrelated_units_are_refused() {
        let e = convert(1.0, 5, Some(1), &[]).unwrap_err();
        assert!(e.contains("no conversion"), "{e}");
        let e = convert(1.0, 99, Some(1), &[]).unwrap_err();
        assert!(e.contains("no unit of measure"), "{e}");
        assert!(convert(1.0, 2, None, &[]).is_err());
    }

    #[test]
    fn per_item_conversions_win() {
        let screws = [UnitConversion {
            unit_measure_id: u(2),
            factor: 100.0,
        }];
        assert_eq!(convert(2.0, 2, Some(1), &screws), Ok(200.0));
        // pallet -> box (per unit), then box -> each (per item).
        assert_eq!(convert(1.0, 3, Some(1), &screws), Ok(4000.0));
        // An item without a base unit counts in its conversions' units.
        assert_eq!(convert(2.0, 2, None, &screws), Ok(200.0));
        // kg for an item kept in each, declared per item.
        let bar = [UnitConversion {
            unit_measure_id: u(5),
            factor: 0.4,
        }];
        assert_eq!(convert(3.0, 5, Some(1), &bar), Ok(1.2));
    }

    #[test]
    fn rounding_is_once_half_away_from_zero() {
        let f = Factor {
            num: Decimal::ONE,
            den: Decimal::from(2_000_000),
        };
        // 1 / 2,000,000 = 0.0000005: rounds up to 0.000001, not to the even 0.000000.
        assert_eq!(f.apply(1.0), Some(0.000001));
        assert_eq!(f.apply(-1.0), Some(-0.000001));
        assert_eq!(f.apply(3.0), Some(0.000002));
        let tenth = Factor::ONE.times(0.1).unwrap();
        assert_eq!(tenth.apply(3.0), Some(0.3));
    }

    #[test]
    fn declarations_are_checked() {
        let mut v = Vec::new();
        check_unit_declaration(u(1), Some(u(1)), Some(2.0), &mut v);
        check_unit_declaration(u(1), Some(u(2)), None, &mut v);
        check_unit_declaration(u(1), None, Some(2.0), &mut v);
        check_unit_declaration(u(1), Some(u(2)), Some(0.0), &mut v);
        let fields: Vec<_> = v.iter().map(|v| v.field.clone().unwrap()).collect();
        assert_eq!(
            fields,
            ["baseUnitMeasureId", "factor", "baseUnitMeasureId", "factor"]
        );
        let mut v = Vec::new();
        let c = |n, factor| UnitConversion {
            unit_measure_id: u(n),
            factor,
        };
        check_item_conversions(
            Some(u(1)),
            &[c(1, 2.0), c(2, 3.0), c(2, 4.0), c(3, -1.0)],
            &mut v,
        );
        let fields: Vec<_> = v.iter().map(|v| v.field.clone().unwrap()).collect();
        assert_eq!(
            fields,
            [
                "unitConversions[0].unitMeasureId",
                "unitConversions[2].unitMeasureId",
                "unitConversions[3].factor"
            ]
        );
        let units = org();
        assert!(check_chain(u(1), u(3), &|id| units.get(&id).copied()).is_err());
        assert!(check_chain(u(7), u(3), &|id| units.get(&id).copied()).is_ok());
    }

    proptest! {
        /// Converting is exact: an integer number of the entered unit is that many times the
        /// factor, to the micro, whichever way the chain is declared.
        #[test]
        fn conversion_is_exact_multiplication(n in 0i64..1_000_000, f in 1u32..10_000, scale in 0u32..4) {
            let factor = f as f64 / 10f64.powi(scale as i32);
            let units: HashMap<Uuid, UnitDef> = HashMap::from([
                (u(1), UnitDef { base: None, factor: None }),
                (u(2), UnitDef { base: Some(u(1)), factor: Some(factor) }),
            ]);
            let get = |id| units.get(&id).copied();
            let to_base = factor_to_base(Some(u(2)), Some(u(1)), &[], &get).unwrap();
            let exact = Decimal::from(n) * Decimal::new(f as i64, scale);
            prop_assert_eq!(to_base.apply(n as f64), Some(exact.to_string().parse::<f64>().unwrap()));
            // Back: base to the unit, rounded once to six decimals.
            let back = factor_to_base(Some(u(1)), Some(u(2)), &[], &get).unwrap();
            let expected = (Decimal::from(n) / Decimal::new(f as i64, scale))
                .round_dp_with_strategy(6, RoundingStrategy::MidpointAwayFromZero);
            prop_assert_eq!(back.apply(n as f64), Some(expected.to_string().parse::<f64>().unwrap()));
        }

        /// A per-item conversion and the same factor declared on the unit agree, and both
        /// agree with the product of a chain's factors.
        #[test]
        fn per_item_and_per_unit_agree(q in 0u32..100_000, a in 1u32..1000, b in 1u32..1000) {
            let q = q as f64 / 100.0;
            let units: HashMap<Uuid, UnitDef> = HashMap::from([
                (u(1), UnitDef { base: None, factor: None }),
                (u(2), UnitDef { base: Some(u(1)), factor: Some(a as f64) }),
                (u(3), UnitDef { base: Some(u(2)), factor: Some(b as f64) }),
            ]);
            let get = |id| units.get(&id).copied();
            let chained = factor_to_base(Some(u(3)), Some(u(1)), &[], &get).unwrap().apply(q);
            let per_item = [UnitConversion { unit_measure_id: u(3), factor: (a * b) as f64 }];
            let direct = factor_to_base(Some(u(3)), Some(u(1)), &per_item, &get).unwrap().apply(q);
            prop_assert_eq!(chained, direct);
            let exact = decimal(q).unwrap() * Decimal::from(a) * Decimal::from(b);
            prop_assert_eq!(chained, Some(exact.to_string().parse::<f64>().unwrap()));
        }

        /// Rounding happens once, to six decimals: never more than half a millionth off the
        /// exact quotient.
        #[test]
        fn rounding_error_is_at_most_half_a_micro(n in -1_000_000i64..1_000_000, d in 1u32..100_000) {
            let units: HashMap<Uuid, UnitDef> = HashMap::from([
                (u(1), UnitDef { base: None, factor: None }),
                (u(2), UnitDef { base: Some(u(1)), factor: Some(d as f64) }),
            ]);
            let get = |id| units.get(&id).copied();
            let f = factor_to_base(Some(u(1)), Some(u(2)), &[], &get).unwrap();
            let got = decimal(f.apply(n as f64).unwrap()).unwrap();
            let exact = Decimal::from(n) / Decimal::from(d);
            prop_assert!((got - exact).abs() <= Decimal::new(5, 7));
        }
    }
}
