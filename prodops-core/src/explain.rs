//! Why a deliverable is where it is (`GET /deliverable/{id}/explain`): the reasons it waits, is
//! late or at risk, cannot be completed, or is short of materials, each as data and as one
//! sentence for a person.
//!
//! The reasons come from the rules that decide each state, not from a second copy of them:
//! readiness (`progress::holds_back`), the alert instants (`tree::own_instants`, `alerts`), the
//! QC gate (`qc::may_complete`, `qc::latest_verdict`) and the BOM arithmetic
//! (`production_actions`, `bom_actions::on_order`). The server reads the facts ([`Facts`]) and
//! [`explain`] turns them into the answer; [`path_down`] is the one walk the facts need, from a
//! late or at-risk node down to the node whose own dates make it so.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::alerts::{self, AsOf, Basis};
use crate::deliverable::{AlertType, ChildSummary, Deliverable, DeliverableType, ProgressStatus};
use crate::inventory::round_quantity;
use crate::openapi::ToSchema;
use crate::qc::{SetVerdict, Verdict, latest_verdict, may_complete};
use crate::tree;

/// A deliverable an explanation names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeRef {
    pub id: Uuid,
    pub name: String,
    pub identifier: String,
    #[serde(rename = "type")]
    pub kind: DeliverableType,
    /// Its progress status (`todo` when never set).
    pub status: ProgressStatus,
}

impl NodeRef {
    pub fn of(d: &Deliverable) -> NodeRef {
        NodeRef {
            id: d.id,
            name: d.name.clone(),
            identifier: d.identifier.clone(),
            kind: d.kind,
            status: tree::status(d),
        }
    }

    /// `“Weld frame” (D-12)`, as sentences name a deliverable.
    fn label(&self) -> String {
        named(&self.name, &self.identifier)
    }
}

fn named(name: &str, identifier: &str) -> String {
    if identifier.trim().is_empty() {
        format!("“{name}”")
    } else {
        format!("“{name}” ({identifier})")
    }
}

/// A finish-to-start predecessor of a waiting deliverable, as it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Predecessor {
    /// The dependency that links it.
    pub dependency_id: Uuid,
    pub deliverable: NodeRef,
    /// What it has completed, and so released to its successors.
    pub completed: f64,
    /// It still holds the successor back: not done and nothing completed.
    pub holds_back: bool,
}

/// Why a deliverable is `waiting`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Waiting {
    /// Every (non-archived) predecessor, those holding it back first.
    pub predecessors: Vec<Predecessor>,
    /// Its children when every one of them waits (a container waits for its children).
    pub waiting_children: Vec<ChildSummary>,
}

/// What made the node at the end of a lateness path late.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LateCause {
    /// Its effective due date passed before it was done.
    DueDate,
    /// Its schedule ended before it was done.
    ScheduleEnd,
}

/// The dates a lateness or risk compares, of the node at the end of its path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Dates {
    /// Its effective due date (`YYYY-MM-DD`).
    pub due_date: Option<String>,
    /// When that due date passes (`YYYY-MM-DDTHH:MM:SSZ`).
    pub due_at: Option<String>,
    /// The due date is an ancestor's.
    pub due_date_is_inherited: bool,
    /// When its schedule ends (`YYYY-MM-DDTHH:MM:SSZ`), `null` unscheduled.
    pub schedule_end: Option<String>,
}

/// Why a deliverable is late.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Late {
    /// Since when (its `computed.lateAt`).
    pub late_since: String,
    /// From the deliverable down to the node whose own dates make it late (only the
    /// deliverable when they are its own).
    pub path: Vec<NodeRef>,
    pub cause: LateCause,
    pub dates: Dates,
}

/// Why a deliverable is at risk of being late.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AtRisk {
    /// Until when (its `computed.atRiskUntil`): then it is late.
    pub at_risk_until: String,
    /// From the deliverable down to the node scheduled to end after its due date.
    pub path: Vec<NodeRef>,
    pub dates: Dates,
}

/// The latest QC verdict of a gated qcstep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LatestVerdict {
    pub qc_set_id: Uuid,
    pub verdict: Verdict,
    #[serde(default, with = "crate::time::iso_opt")]
    pub verdict_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Why a qcstep cannot be completed: its QC gate is shut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QcGate {
    pub qcstep: NodeRef,
    pub qc_template_id: Uuid,
    /// The number of the template's version in force (its highest finalized one).
    pub version_in_force: i64,
    /// How many of the step's QC sets of that template count.
    pub sets: usize,
    /// The latest verdict among them; `null`: none recorded.
    pub latest: Option<LatestVerdict>,
}

/// A BOM line the deliverable draws that its stock does not cover. Quantities are in the
/// item's base unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShortLine {
    pub bom_line_id: Uuid,
    /// The line's name (its item's by default).
    pub name: String,
    pub identifier: String,
    pub item_id: Uuid,
    /// Where the line is used; `null`: the order as a whole.
    pub placed_on_deliverable_id: Option<Uuid>,
    /// What the line still needs: its planned quantity less what was consumed.
    pub needed: f64,
    /// The item's stock on hand, every location.
    pub on_hand: f64,
    /// The item's reserved stock, every location (this line's reservation included).
    pub reserved: f64,
    /// What is reserved for this line.
    pub reserved_for_line: f64,
    /// What the line has on order (its need, when it carries a `poNumber`).
    pub on_order: f64,
    /// What the line can draw: its reservation and the stock no one reserved, at most what is
    /// on hand.
    pub available: f64,
    /// `needed - available`.
    pub short_by: f64,
}

/// What a reason is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ReasonKind {
    Waiting,
    Late,
    AtRisk,
    QcGate,
    MaterialsShort,
}

/// One reason: its kind, a sentence for a person, and the data of its kind (exactly the one
/// member its kind names: `waiting`, `late`, `atRisk`, `qcGate` or `materialsShort`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reason {
    pub kind: ReasonKind,
    pub sentence: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Waiting>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<Late>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_risk: Option<AtRisk>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qc_gate: Option<QcGate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub materials_short: Option<ShortLine>,
}

impl Reason {
    fn new(kind: ReasonKind, sentence: String) -> Reason {
        Reason {
            kind,
            sentence,
            waiting: None,
            late: None,
            at_risk: None,
            qc_gate: None,
            materials_short: None,
        }
    }
}

/// The answer of `GET /deliverable/{id}/explain`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Explanation {
    pub deliverable: NodeRef,
    /// The moment it is explained at (`YYYY-MM-DDTHH:MM:SSZ`): lateness is as of it.
    pub as_of: String,
    /// Its alert as of that moment.
    pub alert_type: AlertType,
    /// One sentence: where it stands, and how many reasons follow.
    pub summary: String,
    /// Waiting, then late, at risk, QC gates, materials.
    pub reasons: Vec<Reason>,
}

/// The facts of one qcstep's gate, as the server reads them.
#[derive(Debug, Clone)]
pub struct QcFacts<'a> {
    pub step: &'a Deliverable,
    pub qc_template_id: Uuid,
    /// The template's version in force and whether it requires pass/fail
    /// (`qc::version_in_force`); `None`: no finalized version.
    pub in_force: Option<(i64, bool)>,
    /// The step's QC sets of that template.
    pub sets: Vec<SetVerdict>,
}

/// The facts of one BOM line the deliverable draws, in the item's base unit.
#[derive(Debug, Clone, PartialEq)]
pub struct LineFacts {
    pub bom_line_id: Uuid,
    pub name: String,
    pub identifier: String,
    pub item_id: Uuid,
    pub placed_on_deliverable_id: Option<Uuid>,
    /// `production_actions::remaining` of its planned quantity.
    pub needed: f64,
    /// `bom_actions::on_order`.
    pub on_order: f64,
    pub on_hand: f64,
    pub reserved: f64,
    pub reserved_for_line: f64,
}

/// What the server reads to explain `node`.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub node: &'a Deliverable,
    /// Its non-archived predecessors, each with the id of its dependency.
    pub predecessors: Vec<(Uuid, &'a Deliverable)>,
    /// [`path_down`] along [`Along::Late`] (empty when it is not late).
    pub late_path: Vec<&'a Deliverable>,
    /// [`path_down`] along [`Along::AtRisk`] (empty when it is not at risk).
    pub at_risk_path: Vec<&'a Deliverable>,
    /// The gates of the qcsteps its completion needs: itself, or a stage's qcstep children.
    pub qc: Vec<QcFacts<'a>>,
    /// The BOM lines it draws (`production_actions::lines_drawn_by`).
    pub materials: Vec<LineFacts>,
}

/// Which instant a path follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Along {
    /// `computed.lateAt`: from when the node or one below it is late.
    Late,
    /// `computed.atRiskUntil`: until when the node or one below it is at risk.
    AtRisk,
}

impl Along {
    fn stored(self, d: &Deliverable) -> Option<&str> {
        match self {
            Along::Late => d.computed.late_at.as_deref(),
            Along::AtRisk => d.computed.at_risk_until.as_deref(),
        }
    }

    fn own(self, d: &Deliverable) -> Option<String> {
        let own = tree::own_instants(d, d.computed.effective_due_at.as_deref());
        match self {
            Along::Late => own.late_at,
            Along::AtRisk => own.at_risk_until,
        }
    }
}

/// The deepest a path goes: a deliverable is at most 64 levels deep (docs/limits.md); the
/// bound keeps a walk finite whatever the stored records say.
const MAX_PATH: usize = 128;

/// The path from `node` down to the node whose own dates give `node`'s instant `along`
/// (the tree takes a parent's instant from its own dates or from a child's, `tree::compute`):
/// at each node, stop when its own instant is the one sought, else go to the first
/// non-archived child (`children` gives them in sibling order) that carries it. Empty when
/// `node` has no such instant. Reads the children of each node on the path, no more.
pub fn path_down<E>(
    node: &Deliverable,
    along: Along,
    mut children: impl FnMut(Uuid) -> Result<Vec<Deliverable>, E>,
) -> Result<Vec<Deliverable>, E> {
    let Some(target) = along.stored(node).map(str::to_string) else {
        return Ok(Vec::new());
    };
    let mut path = vec![node.clone()];
    while path.len() < MAX_PATH {
        let here = path.last().expect("the path starts with the node");
        if along.own(here).as_deref() == Some(target.as_str()) {
            break;
        }
        let next = children(here.id)?
            .into_iter()
            .find(|c| !c.is_archived && along.stored(c) == Some(target.as_str()));
        match next {
            Some(c) => path.push(c),
            None => break,
        }
    }
    Ok(path)
}

/// The alerts of `node` as of `now`, from its stored instants (as every read answers them).
fn alerts_now(node: &Deliverable, now: &AsOf) -> alerts::Alerts {
    let c = &node.computed;
    alerts::as_of(
        &Basis {
            on_hold: c.alert_type == AlertType::OnHold,
            done: tree::status(node) == ProgressStatus::Done,
            effective_due_at: c.effective_due_at.as_deref(),
            late_at: c.late_at.as_deref(),
            at_risk_until: c.at_risk_until.as_deref(),
        },
        now,
    )
}

fn dates_of(d: &Deliverable) -> Dates {
    let own = tree::own_instants(d, d.computed.effective_due_at.as_deref());
    Dates {
        due_date: d.computed.effective_due_date.clone(),
        due_at: d.computed.effective_due_at.clone(),
        due_date_is_inherited: d.computed.effective_due_date_is_inherited,
        schedule_end: own.end_at,
    }
}

/// `A › B › C`, the path's names.
fn trail(path: &[NodeRef]) -> String {
    path.iter()
        .map(|n| format!("“{}”", n.name))
        .collect::<Vec<_>>()
        .join(" › ")
}

/// Its due date as a sentence says it: `its due date 2026-01-10 (inherited)`.
fn due_words(dates: &Dates) -> String {
    match &dates.due_date {
        Some(d) if dates.due_date_is_inherited => format!("its due date {d} (inherited)"),
        Some(d) => format!("its due date {d}"),
        None => "no due date".to_string(),
    }
}

/// A quantity as sentences write it: whole numbers without a fraction.
fn qty(x: f64) -> String {
    let x = round_quantity(x);
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

fn status_word(s: ProgressStatus) -> &'static str {
    match s {
        ProgressStatus::Waiting => "waiting",
        ProgressStatus::Todo => "todo",
        ProgressStatus::Wip => "wip",
        ProgressStatus::Rework => "rework",
        ProgressStatus::OnHold => "on-hold",
        ProgressStatus::Done => "done",
    }
}

fn waiting_reason(facts: &Facts) -> Option<Reason> {
    let node = facts.node;
    if tree::status(node) != ProgressStatus::Waiting {
        return None;
    }
    let me = NodeRef::of(node).label();
    let mut predecessors: Vec<Predecessor> = facts
        .predecessors
        .iter()
        .map(|(dep, p)| Predecessor {
            dependency_id: *dep,
            deliverable: NodeRef::of(p),
            completed: p.progress.as_ref().map_or(0.0, |x| x.completed.max(0.0)),
            holds_back: crate::progress::holds_back(p.progress.as_ref()),
        })
        .collect();
    // Those holding it back first, then by name, so the sentence and the data read alike.
    predecessors.sort_by(|a, b| {
        b.holds_back
            .cmp(&a.holds_back)
            .then_with(|| a.deliverable.name.cmp(&b.deliverable.name))
            .then_with(|| a.deliverable.id.cmp(&b.deliverable.id))
    });
    let holding: Vec<&Predecessor> = predecessors.iter().filter(|p| p.holds_back).collect();
    let children = &node.computed.current_children;
    let waiting_children: Vec<ChildSummary> =
        if !children.is_empty() && children.iter().all(|c| c.status == ProgressStatus::Waiting) {
            children.clone()
        } else {
            Vec::new()
        };
    let sentence = if !holding.is_empty() {
        let each: Vec<String> = holding
            .iter()
            .map(|p| {
                format!(
                    "{} is {} and has completed nothing",
                    p.deliverable.label(),
                    status_word(p.deliverable.status)
                )
            })
            .collect();
        let count = if holding.len() == 1 {
            "its predecessor".to_string()
        } else {
            format!("{} predecessors", holding.len())
        };
        format!("{me} is waiting for {count}: {}.", each.join("; "))
    } else if !waiting_children.is_empty() {
        let names: Vec<String> = waiting_children
            .iter()
            .map(|c| format!("“{}”", c.name))
            .collect();
        format!(
            "{me} is waiting because every child of it waits: {}.",
            names.join(", ")
        )
    } else {
        format!(
            "{me} is waiting, though no predecessor holds it back now (it becomes todo when its readiness is next evaluated)."
        )
    };
    let mut r = Reason::new(ReasonKind::Waiting, sentence);
    r.waiting = Some(Waiting {
        predecessors,
        waiting_children,
    });
    Some(r)
}

fn late_reason(facts: &Facts, now: &AsOf) -> Option<Reason> {
    let node = facts.node;
    let since = node.computed.late_at.clone()?;
    if !alerts::reached(Some(&since), now) {
        return None;
    }
    let me = NodeRef::of(node).label();
    let culprit = facts.late_path.last().copied().unwrap_or(node);
    let dates = dates_of(culprit);
    // The cause is the date the instant came from: the due date when it passes then, else the
    // schedule's end (`tree::own_instants` takes the earlier of the two).
    let cause = if dates.due_at.as_deref() == Some(since.as_str()) {
        LateCause::DueDate
    } else {
        LateCause::ScheduleEnd
    };
    let path: Vec<NodeRef> = if facts.late_path.is_empty() {
        vec![NodeRef::of(node)]
    } else {
        facts.late_path.iter().map(|d| NodeRef::of(d)).collect()
    };
    let what = match cause {
        LateCause::DueDate => format!("{} passed at {since}", due_words(&dates)),
        LateCause::ScheduleEnd => format!(
            "its schedule ended at {} ({})",
            dates.schedule_end.as_deref().unwrap_or(&since),
            due_words(&dates)
        ),
    };
    let sentence = if path.len() <= 1 {
        format!("{me} is late since {since}: it is not done and {what}.")
    } else {
        let c = path.last().expect("a path of two or more").label();
        format!(
            "{me} is late since {since}, along {}: {c} is not done and {what}.",
            trail(&path)
        )
    };
    let mut r = Reason::new(ReasonKind::Late, sentence);
    r.late = Some(Late {
        late_since: since,
        path,
        cause,
        dates,
    });
    Some(r)
}

fn at_risk_reason(facts: &Facts, now: &AsOf) -> Option<Reason> {
    let node = facts.node;
    let until = node.computed.at_risk_until.clone()?;
    if !alerts::ahead(Some(&until), now) {
        return None;
    }
    let me = NodeRef::of(node).label();
    let culprit = facts.at_risk_path.last().copied().unwrap_or(node);
    let dates = dates_of(culprit);
    let path: Vec<NodeRef> = if facts.at_risk_path.is_empty() {
        vec![NodeRef::of(node)]
    } else {
        facts.at_risk_path.iter().map(|d| NodeRef::of(d)).collect()
    };
    let end = dates.schedule_end.clone().unwrap_or_default();
    let what = format!(
        "is scheduled to end at {end}, after {}, which passes at {until}",
        due_words(&dates)
    );
    let sentence = if path.len() <= 1 {
        format!("{me} is at risk until {until}: it {what}.")
    } else {
        let c = path.last().expect("a path of two or more").label();
        format!(
            "{me} is at risk until {until}, along {}: {c} {what}.",
            trail(&path)
        )
    };
    let mut r = Reason::new(ReasonKind::AtRisk, sentence);
    r.at_risk = Some(AtRisk {
        at_risk_until: until,
        path,
        dates,
    });
    Some(r)
}

fn qc_reason(gate: &QcFacts) -> Option<Reason> {
    if tree::status(gate.step) == ProgressStatus::Done {
        return None;
    }
    let (version, gated) = gate.in_force?;
    // The gate's own rule decides; the sentence only says what it saw.
    may_complete(gate.step.id, Some(gated), &gate.sets).err()?;
    let step = NodeRef::of(gate.step);
    let latest = latest_verdict(&gate.sets).and_then(|s| {
        s.verdict.map(|verdict| LatestVerdict {
            qc_set_id: s.qc_set_id,
            verdict,
            verdict_at: s.verdict_at,
        })
    });
    let seen = match &latest {
        Some(l) => {
            let at = l
                .verdict_at
                .map(|t| format!(" at {}", alerts::stamp(t)))
                .unwrap_or_default();
            format!(
                "its latest verdict, of QC set {}{at}, is {}",
                l.qc_set_id,
                match l.verdict {
                    Verdict::Pass => "pass",
                    Verdict::Fail => "fail",
                }
            )
        }
        None => "no QC set for it records a verdict yet".to_string(),
    };
    let sentence = format!(
        "{} cannot be completed: version {version} of its QC template requires a pass, and {seen}.",
        step.label()
    );
    let mut r = Reason::new(ReasonKind::QcGate, sentence);
    r.qc_gate = Some(QcGate {
        qcstep: step,
        qc_template_id: gate.qc_template_id,
        version_in_force: version,
        sets: gate.sets.len(),
        latest,
    });
    Some(r)
}

/// What a line can draw: its own reservation and the item's stock that no line reserved, but
/// never more than is on hand (a reservation may exceed the stock; it makes none).
pub fn available(line: &LineFacts) -> f64 {
    let on_hand = line.on_hand.max(0.0);
    let drawable = line.reserved_for_line.max(0.0) + (on_hand - line.reserved).max(0.0);
    round_quantity(drawable.min(on_hand))
}

/// How much a line is short: what it needs beyond what it can draw ([`available`]); 0 when
/// covered. What is on order is not stock yet, so it does not cover a shortage (the sentence
/// says whether it will).
pub fn short_by(line: &LineFacts) -> f64 {
    round_quantity((line.needed - available(line)).max(0.0))
}

fn material_reason(line: &LineFacts) -> Option<Reason> {
    let short = short_by(line);
    if short <= 0.0 {
        return None;
    }
    let available = available(line);
    let cover = if line.on_order >= short {
        format!("{} on order would cover it", qty(line.on_order))
    } else if line.on_order > 0.0 {
        format!("only {} is on order", qty(line.on_order))
    } else {
        "nothing is on order".to_string()
    };
    let sentence = format!(
        "BOM line {} is short by {}: it still needs {}, and {} is available to it ({} reserved for it; {} on hand, {} reserved in all); {cover}.",
        named(&line.name, &line.identifier),
        qty(short),
        qty(line.needed),
        qty(available),
        qty(line.reserved_for_line),
        qty(line.on_hand),
        qty(line.reserved),
    );
    let mut r = Reason::new(ReasonKind::MaterialsShort, sentence);
    r.materials_short = Some(ShortLine {
        bom_line_id: line.bom_line_id,
        name: line.name.clone(),
        identifier: line.identifier.clone(),
        item_id: line.item_id,
        placed_on_deliverable_id: line.placed_on_deliverable_id,
        needed: round_quantity(line.needed),
        on_hand: round_quantity(line.on_hand),
        reserved: round_quantity(line.reserved),
        reserved_for_line: round_quantity(line.reserved_for_line),
        on_order: round_quantity(line.on_order),
        available,
        short_by: short,
    });
    Some(r)
}

/// The explanation of `facts.node` as of `now`: every reason that holds, in the order
/// waiting, late, at risk, QC gates, materials.
pub fn explain(facts: &Facts, now: &AsOf) -> Explanation {
    let node = facts.node;
    let me = NodeRef::of(node);
    let mut reasons = Vec::new();
    reasons.extend(waiting_reason(facts));
    reasons.extend(late_reason(facts, now));
    reasons.extend(at_risk_reason(facts, now));
    reasons.extend(facts.qc.iter().filter_map(qc_reason));
    if tree::status(node) != ProgressStatus::Done {
        reasons.extend(facts.materials.iter().filter_map(material_reason));
    }
    let alert = alerts_now(node, now).alert_type;
    let alert_word = match alert {
        AlertType::NoRisk => "no risk",
        AlertType::AtRisk => "at risk",
        AlertType::Late => "late",
        AlertType::OnHold => "on hold",
    };
    let summary = match reasons.len() {
        0 => format!(
            "{} ({}) is {}, alert {alert_word}: nothing holds it back.",
            me.label(),
            me.kind,
            status_word(me.status)
        ),
        n => format!(
            "{} ({}) is {}, alert {alert_word}: {n} reason{} follow{}.",
            me.label(),
            me.kind,
            status_word(me.status),
            if n == 1 { "" } else { "s" },
            if n == 1 { "s" } else { "" },
        ),
    };
    let mut as_of = now.as_str().to_string();
    as_of.push('Z');
    Explanation {
        deliverable: me,
        as_of,
        alert_type: alert,
        summary,
        reasons,
    }
}

#[cfg(test)]
mod tests;
