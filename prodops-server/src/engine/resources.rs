//! The resource table: every standard resource as the engine serves it, built once at start by
//! the composition root (`families::resources`) and carried in the app state and each request's
//! context (`Ctx::resource`). A lookup is an index by [`ResourceId`], never a search by path.

use std::fmt;
use std::sync::Arc;

use prodops_core::registry::ResourceId;

use super::ServedResource;
use super::hooks::Hooks;
use crate::http::context::{Ctx, ResourceTable};

/// Every standard resource with its hooks, indexed by [`ResourceId`] (in the order of
/// `ResourceId::ALL`).
pub struct Resources {
    all: Vec<Arc<ServedResource>>,
}

impl Resources {
    /// The table of every registered resource, each served with the hooks `hooks` binds it to.
    pub fn new(hooks: impl Fn(ResourceId) -> Arc<dyn Hooks>) -> Self {
        let all = ResourceId::ALL
            .iter()
            .map(|&id| Arc::new(ServedResource::new(id.kind(), hooks(id))))
            .collect();
        Resources { all }
    }

    /// Every resource served without hooks of its own, for unit tests of the engine and of code
    /// that needs no family's hooks.
    #[cfg(test)]
    pub fn without_hooks() -> Self {
        Resources::new(|_| Arc::new(super::hooks::NoHooks))
    }

    /// The engine's table behind a [`ResourceTable`] (the app state's, a request context's).
    pub fn of(table: &ResourceTable) -> &Resources {
        table
            .downcast_ref::<Resources>()
            .expect("the resource table is the engine's `Resources`")
    }

    /// The resource `id`.
    pub fn get(&self, id: ResourceId) -> &Arc<ServedResource> {
        &self.all[id as usize]
    }

    /// Every resource, in the order of `prodops_core::registry::resources()`.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<ServedResource>> {
        self.all.iter()
    }
}

impl fmt::Debug for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.all.iter().map(|r| r.desc().path))
            .finish()
    }
}

impl Ctx {
    /// The resource `id` as this request is served it.
    pub fn resource(&self, id: ResourceId) -> &Arc<ServedResource> {
        self.resources().get(id)
    }

    /// The request's resource table.
    pub fn resources(&self) -> &Resources {
        Resources::of(&self.resources)
    }
}
