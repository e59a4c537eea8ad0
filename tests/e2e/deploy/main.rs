//! End-to-end tests of what `deploy/` and the image ship: the manifests applied to the local
//! control plane, RBAC, readiness, variants, the Helm chart beside kustomize, policy swaps, the
//! commands the docs give, the demo.

mod argo_only;
mod cache_volume;
mod chart_argo_install;
mod chart_compose;
mod chart_loops;
mod chart_readme;
mod demo_figure;
mod demo_output;
mod doc_commands;
mod first_install;
mod fleet;
mod helm;
mod image_registry;
mod install_path;
mod manifests;
mod pins;
mod plan;
mod policy_swap;
mod rbac;
mod readiness;
mod variants;
