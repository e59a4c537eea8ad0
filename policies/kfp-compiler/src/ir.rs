//! Telling apart the documents of an IR file: the pipeline spec (or a `PipelineJob` wrapping
//! one) and the optional platform spec.

use serde_json::Value;

use crate::error::CompileError;
use crate::options::CompileOptions;

/// What the pipeline document of an IR file is.
#[derive(Clone, Debug, PartialEq)]
pub enum Pipeline {
    /// A `PipelineSpec`, as the SDK writes it.
    Spec(Value),
    /// A `PipelineJob` with `pipelineSpec`, `displayName`, `runtimeConfig`.
    Job(Value),
}

/// A parsed IR file, ready to compile.
#[derive(Clone, Debug, PartialEq)]
pub struct IrFile {
    pub pipeline: Pipeline,
    /// A `PlatformSpec` document (`{"platforms": {...}}`).
    pub platform_spec: Option<Value>,
}

impl IrFile {
    /// Sorts the documents of a YAML stream (or a single JSON document). Empty documents are
    /// skipped; anything that is neither pipeline nor platform spec is an error.
    pub fn from_documents(
        documents: impl IntoIterator<Item = Value>,
    ) -> Result<Self, CompileError> {
        let mut pipeline = None;
        let mut platform_spec = None;
        for (index, document) in documents.into_iter().enumerate() {
            let number = index + 1;
            let Value::Object(fields) = &document else {
                if document.is_null() {
                    continue;
                }
                return Err(CompileError::Invalid(format!(
                    "document {number} is not an object"
                )));
            };
            let is_job =
                fields.contains_key("pipelineSpec") || fields.contains_key("pipeline_spec");
            let is_spec = [
                "pipelineInfo",
                "pipeline_info",
                "root",
                "components",
                "deploymentSpec",
            ]
            .iter()
            .any(|key| fields.contains_key(*key));
            if is_job || is_spec {
                if pipeline.is_some() {
                    return Err(CompileError::Invalid(
                        "multiple pipeline specs provided".into(),
                    ));
                }
                pipeline = Some(if is_job {
                    Pipeline::Job(document)
                } else {
                    Pipeline::Spec(document)
                });
            } else if fields.contains_key("platforms") {
                if platform_spec.is_some() {
                    return Err(CompileError::Invalid(
                        "multiple platform specs provided".into(),
                    ));
                }
                platform_spec = Some(document);
            } else {
                return Err(CompileError::Invalid(format!(
                    "document {number} is neither a pipeline spec nor a platform spec (no \
                     pipelineInfo, root, pipelineSpec or platforms key)"
                )));
            }
        }
        let pipeline =
            pipeline.ok_or_else(|| CompileError::Invalid("no pipeline spec is provided".into()))?;
        Ok(IrFile {
            pipeline,
            platform_spec,
        })
    }

    pub fn compile(&self, options: &CompileOptions) -> Result<Value, CompileError> {
        match &self.pipeline {
            Pipeline::Spec(spec) => crate::compile(spec, self.platform_spec.as_ref(), options),
            Pipeline::Job(job) => crate::compile_job(job, self.platform_spec.as_ref(), options),
        }
    }
}
