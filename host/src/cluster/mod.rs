//! What talks to the cluster and is shared by `run` and `plan`: the resources, the policy with
//! its settings (loaded, held, reloaded), the KFP install and its target version, the mark key,
//! API errors as people read them, and TLS.

pub mod api_error;
pub mod api_server_install;
pub mod kfp_target;
pub mod mark_key;
pub mod policy_handle;
pub mod policy_load;
pub mod policy_reload;
pub mod resources;
pub mod settings_source;
pub mod tls;
