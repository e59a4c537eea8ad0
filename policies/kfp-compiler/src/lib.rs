//! A Rust port of the Argo compiler of Kubeflow Pipelines
//! (`backend/src/v2/compiler/argocompiler`), compiling as each supported release's own
//! compiler does ([`Release`]: 2.14.4, 2.15.0, 2.16.0, 2.16.1, 2.17.0; chosen by
//! [`CompileOptions::release`]): a KFP pipeline spec (IR) in, the Argo `Workflow` that
//! release's API server would create out, byte for byte where KFP stores JSON.
//!
//! [`recover_ir`] goes the other way: it rebuilds the pipeline spec, platform spec and runtime
//! config from a workflow compiled by any KFP 2.x, so a stale workflow can be recompiled.
//!
//! The library has no I/O: input and output are `serde_json::Value`s.

pub mod argo;
mod compiler;
mod error;
pub mod gojson;
mod hash;
mod ir;
pub mod options;
pub mod proto;
pub mod quantity;
mod recover;
pub mod release;

use serde_json::Value;

pub use compiler::JobParts;
pub use error::CompileError;
pub use ir::{IrFile, Pipeline};
pub use options::{CompileOptions, SettingsError};
pub use recover::{Layout, RecoverError, RecoveredIr, recover_ir};
pub use release::{Feature, Release, UnknownRelease};

/// Compiles a pipeline spec to an Argo Workflow, as `argocompiler.Compile` does for a
/// `PipelineJob` holding only that spec.
///
/// `platform_spec` is the `PlatformSpec` document that follows the pipeline spec in an IR
/// file (`{"platforms": {"kubernetes": ...}}`); only its `kubernetes` entry is used.
pub fn compile(
    pipeline_spec: &Value,
    platform_spec: Option<&Value>,
    options: &CompileOptions,
) -> Result<Value, CompileError> {
    compiler::compile(pipeline_spec, platform_spec, JobParts::default(), options)
}

/// Compiles a `PipelineJob` (protojson: `pipelineSpec`, `displayName`, `runtimeConfig`): the
/// display name goes to the drivers' `--run_display_name`, the runtime config to the root
/// driver, as the API server does for a run or a recurring run.
pub fn compile_job(
    job: &Value,
    platform_spec: Option<&Value>,
    options: &CompileOptions,
) -> Result<Value, CompileError> {
    let field = |json: &str, proto: &str| job.get(json).or_else(|| job.get(proto));
    let Some(fields) = job.as_object() else {
        return Err(CompileError::Invalid(
            "a PipelineJob must be a JSON object".into(),
        ));
    };
    if let Some(key) = fields.keys().find(|key| {
        proto::pipeline::PIPELINE_JOB
            .fields
            .iter()
            .all(|f| f.json != *key && f.proto != *key)
    }) {
        return Err(CompileError::Invalid(format!(
            "unknown field {key:?} in PipelineJob"
        )));
    }
    let spec = field("pipelineSpec", "pipeline_spec")
        .filter(|spec| !spec.is_null())
        .ok_or_else(|| CompileError::Invalid("the PipelineJob has no pipelineSpec".into()))?;
    let display_name = field("displayName", "display_name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let runtime_config = field("runtimeConfig", "runtime_config").filter(|c| !c.is_null());
    compiler::compile(
        spec,
        platform_spec,
        JobParts {
            display_name,
            runtime_config,
        },
        options,
    )
}
