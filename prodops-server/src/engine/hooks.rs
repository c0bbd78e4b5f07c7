//! The interface of resource-specific rules that need the database, plugged into the engine's
//! write pipeline. The rules themselves live in `prodops-core`; a hook (in the module of its
//! resource family) reads the facts they need and applies the decision. Which resource gets
//! which hooks is decided at the composition root (`families.rs`).

use serde_json::{Map, Value};

use crate::engine::ServedResource;
use crate::http::app::AppState;
use crate::http::context::{Action, Auth, Ctx};
use crate::http::error::ApiResult;
use crate::store::Tx;

/// Points in the engine's pipeline where a resource adds its own rules. Every method defaults
/// to doing nothing.
#[allow(unused_variables)]
pub trait Hooks: Send + Sync {
    /// Before a new record is checked: fill server-generated fields.
    fn before_create(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// Before a changed record is checked: state transitions that rewrite other fields.
    fn before_update(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        old: &Value,
        patch: &Map<String, Value>,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// After the record passed its own rules and before it is written: rules needing other records.
    fn check_facts(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// After the record was written, in the same transaction.
    fn after_write(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// After every record of a bulk PUT, PATCH or DELETE was written, in the same transaction:
    /// work the hooks put off while the call ran (`ctx.deferred`), done once for the batch.
    fn end_bulk(&self, tx: &mut dyn Tx, ctx: &Ctx, res: &ServedResource) -> ApiResult<()> {
        Ok(())
    }

    /// Before a DELETE archives or removes the record. `Handled` means the hook did what DELETE
    /// means for this record itself (deactivating a catalog entry that history references, ...).
    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        record: &Value,
    ) -> ApiResult<DeleteAction> {
        Ok(DeleteAction::Proceed)
    }

    /// Whether a bulk PUT may work per batch on this resource: look the batch's ids up at
    /// once, and check and store its plain creates (see [`Hooks::plain_create`]) together in
    /// multi-row inserts. Answering true promises that no hook of the resource writes a record
    /// of its own table other than the one being written, so ids looked up at the start of
    /// the batch stay true for every row the batch does not write itself.
    fn batch_creates(&self) -> bool {
        false
    }

    /// Whether a bulk PUT (with [`Hooks::batch_creates`]) may also hold back the rows of
    /// creates that need hooks and write them with the plain ones, in multi-row inserts:
    /// `before_create`, `check_facts` and `after_write` run when the record comes, and its row
    /// and its event go in later, before anything but another create of the call runs.
    /// Answering true promises that, within a bulk call, those hooks read no record of the
    /// resource's table that the call created except through what the call keeps
    /// (`ctx.deferred`), and that `after_write` writes nothing and records no event.
    fn hold_hooked_creates(&self) -> bool {
        false
    }

    /// Before a bulk PUT (with [`Hooks::batch_creates`]) writes anything: the stored texts of
    /// the records it names that exist, which it will update, and the texts (as sent) of the
    /// records it will create with hooks, each in the body's order. Hooks that read other
    /// records for each write can read them here for all at once and keep them in
    /// `ctx.deferred`, as long as what they keep stays true while the call writes.
    fn read_ahead(
        &self,
        _tx: &mut dyn Tx,
        _ctx: &Ctx,
        _res: &ServedResource,
        _stored: &[&str],
        _created: &[&str],
    ) -> ApiResult<()> {
        Ok(())
    }

    /// Whether creating this candidate (built, not yet checked; `field` reads its top-level
    /// fields) needs none of `before_create`, `check_facts` and `after_write`: then a bulk PUT
    /// only checks it with the resource's rules and stores it. Only asked when
    /// [`Hooks::batch_creates`] is true.
    fn plain_create(&self, field: &dyn Fn(&str) -> Option<Value>) -> bool {
        let _ = field;
        false
    }

    /// Whether `before_update` fills fields of the record from other records (a name or unit
    /// taken from the item when left empty, ...): then a PATCH body's fields cannot be judged
    /// by the record's rules before a record is read (`engine::pipeline::check_patch_body`).
    fn fills_on_update(&self) -> bool {
        false
    }

    /// The permission check of a standard call; by default the resource's
    /// `<Permission>.<Action>` (decisions.md section 2).
    fn authorize(&self, auth: &Auth, res: &ServedResource, action: Action) -> ApiResult<()> {
        auth.require(res.desc().permission, action)
    }

    /// Whether answers rewrite stored records (generated links, derived fields).
    fn presents(&self) -> bool {
        false
    }

    /// Rewrites a stored record for an answer (read or write); only called when `presents`.
    fn present(
        &self,
        state: &AppState,
        tx: &mut dyn Tx,
        auth: &Auth,
        record: &mut Value,
    ) -> ApiResult<()> {
        Ok(())
    }
}

/// Rewrites stored JSON texts for an answer: the fields answered as of the moment of the read
/// ([`as_of_now`], on the state's clock), then through `present`.
pub fn present_raw(
    res: &ServedResource,
    state: &AppState,
    tx: &mut dyn Tx,
    auth: &Auth,
    values: &mut [String],
) -> ApiResult<()> {
    as_of_now(res, &state.clock.as_of(), values);
    if !res.hooks.presents() {
        return Ok(());
    }
    for text in values.iter_mut() {
        let mut record: Value =
            serde_json::from_str(text).map_err(crate::http::error::ApiError::internal)?;
        res.hooks.present(state, tx, auth, &mut record)?;
        *text = record.to_string();
    }
    Ok(())
}

/// What a DELETE goes on to do after `before_delete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteAction {
    /// Archive or remove the record, as the resource's description says.
    Proceed,
    /// The hook has done it.
    Handled,
}
/// The hooks of a resource without rules of its own: every create is plain.
pub struct NoHooks;
impl Hooks for NoHooks {
    fn batch_creates(&self) -> bool {
        true
    }

    fn plain_create(&self, _field: &dyn Fn(&str) -> Option<Value>) -> bool {
        true
    }
}

/// Rewrites stored JSON texts so that the fields whose answer depends on the moment of the read
/// (a deliverable's alerts) are those of `now` (`prodops_core::alerts::patch_stored`); a text
/// whose stored answers are already right is left as it is, without being parsed.
pub fn as_of_now(res: &ServedResource, now: &prodops_core::alerts::AsOf, values: &mut [String]) {
    if !prodops_core::alerts::patches_stored(res.table()) {
        return;
    }
    for text in values.iter_mut() {
        if let Some(patched) = prodops_core::alerts::patch_stored(res.table(), text, now) {
            *text = patched;
        }
    }
}
