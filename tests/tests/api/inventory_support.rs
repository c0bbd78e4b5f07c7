//! Shared setup of the inventory and production tests: shops, locations, items, and the check
//! that stock on hand equals the sum of the ledger.

use std::collections::BTreeMap;

use prodops_tests::*;
use serde_json::Value;

/// An organization with two shops: `shop` holds locations `a`, `b`, `c`; `other_shop` holds `x`.
pub struct Floor {
    pub api: Api,
    pub shop: String,
    pub other_shop: String,
    pub a: String,
    pub b: String,
    pub c: String,
    pub x: String,
    pub unit: String,
}

impl Floor {
    pub async fn new(api: Api) -> Floor {
        let shop = api.create("shop", json!({"name": "Weld"})).await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let other_shop = api.create("shop", json!({"name": "Paint"})).await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let unit = api
            .create("unit-measure", json!({"name": "Kilogram", "symbol": "kg"}))
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let mut locs = Vec::new();
        for (name, s) in [("A", &shop), ("B", &shop), ("C", &shop), ("X", &other_shop)] {
            locs.push(
                api.create("location", json!({"name": name, "shopId": s}))
                    .await["id"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
        Floor {
            api,
            shop,
            other_shop,
            a: locs[0].clone(),
            b: locs[1].clone(),
            c: locs[2].clone(),
            x: locs[3].clone(),
            unit,
        }
    }

    /// A new item (with this floor's unit, and `default_location` if given).
    pub async fn item(&self, name: &str, default_location: Option<&str>) -> String {
        self.api
            .create(
                "item",
                json!({"name": name, "unitMeasureId": self.unit, "defaultLocationId": default_location}),
            )
            .await["id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Posts an adjust of `quantity` at `location` and expects 201.
    pub async fn adjust(&self, item: &str, location: &str, quantity: f64) -> Value {
        let resp = self
            .api
            .post(
                "/inventory-transaction",
                json!({"itemId": item, "type": "adjust", "quantity": quantity, "toLocationId": location}),
            )
            .await;
        assert_eq!(resp.status, 201, "{resp}");
        resp.body
    }

    /// Stock on hand of an item at a location (0 without a row).
    pub async fn on_hand(&self, item: &str, location: &str) -> f64 {
        let values = self
            .api
            .list("stock", &format!("itemId={item}&locationId={location}"))
            .await;
        values
            .first()
            .map_or(0.0, |v| v["onHand"].as_f64().unwrap())
    }
}

/// Every ledger row of the organization.
pub async fn ledger(api: &Api) -> Vec<Value> {
    let mut rows = Vec::new();
    for page in 1.. {
        let values = api
            .list(
                "inventory-transaction",
                &format!("pageSize=10000&page={page}"),
            )
            .await;
        let n = values.len();
        rows.extend(values);
        if n < 10000 {
            break;
        }
    }
    rows
}

fn micros(q: f64) -> i64 {
    (q * 1_000_000.0).round() as i64
}

/// The stock the ledger rows sum to, per (item, location), in micros, as spec 2.7 defines
/// each type's effect (written independently of the server's code).
pub fn ledger_sums(rows: &[Value]) -> BTreeMap<(String, String), i64> {
    let mut sums: BTreeMap<(String, String), i64> = BTreeMap::new();
    for row in rows {
        let item = row["itemId"].as_str().unwrap().to_string();
        let q = micros(row["quantity"].as_f64().unwrap());
        // A reversal does the opposite of its type (`reversesId` names the row it reverses).
        let q = if row["reversesId"].is_string() { -q } else { q };
        let from = row["fromLocationId"].as_str().map(str::to_string);
        let to = row["toLocationId"].as_str().map(str::to_string);
        let mut add = |loc: Option<String>, d: i64| {
            *sums
                .entry((item.clone(), loc.expect("location")))
                .or_default() += d;
        };
        match row["type"].as_str().unwrap() {
            "adjust" => add(to.or(from), q),
            "transfer" => {
                add(from, -q);
                add(to, q);
            }
            "receipt" | "produce" => add(to, q),
            "consume" | "ship" | "return" => add(from, -q),
            other => panic!("unknown type {other}"),
        }
    }
    sums
}

/// Every stock row of the organization, in micros.
pub async fn stock_rows(api: &Api) -> BTreeMap<(String, String), (i64, String)> {
    let mut out = BTreeMap::new();
    for v in api.list("stock", "pageSize=10000").await {
        out.insert(
            (
                v["itemId"].as_str().unwrap().to_string(),
                v["locationId"].as_str().unwrap().to_string(),
            ),
            (
                micros(v["onHand"].as_f64().unwrap()),
                v["shopId"].as_str().unwrap().to_string(),
            ),
        );
    }
    out
}

/// Stock on hand equals the sum of the ledger everywhere and is never negative; returns the
/// number of ledger rows.
pub async fn assert_stock_is_ledger(api: &Api) -> usize {
    let rows = ledger(api).await;
    let sums = ledger_sums(&rows);
    let stock = stock_rows(api).await;
    for (key, (on_hand, _)) in &stock {
        assert_eq!(
            *on_hand,
            sums.get(key).copied().unwrap_or(0),
            "stock of {key:?} equals the sum of its ledger"
        );
        assert!(*on_hand >= 0, "stock of {key:?} is not negative: {on_hand}");
    }
    for (key, sum) in &sums {
        assert_eq!(
            stock.get(key).map(|s| s.0),
            Some(*sum),
            "every ledger key has a stock row: {key:?}"
        );
    }
    rows.len()
}
