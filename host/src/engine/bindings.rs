//! Host-side bindings for the `pipewarden:policy@0.1.1` world.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "policy",
});

pub use self::pipewarden::policy::host::LogLevel;
// The world `use`s the decision records, so they are already at this level; the rest:
pub use self::pipewarden::policy::types::{EventKind, RebuildPolicy, Stamps};
