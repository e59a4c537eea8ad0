//! End-to-end tests of what `deploy/` and the image ship: the manifests applied to the local
//! control plane, RBAC, readiness, variants, policy swaps, the README's ship commands, the demo.

mod demo_output;
mod first_install;
mod image_registry;
mod manifests;
mod plan;
mod policy_swap;
mod rbac;
mod readiness;
mod readme_ship;
mod variants;
