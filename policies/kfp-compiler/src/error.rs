use crate::proto::ProtoError;

/// Why a pipeline did not compile. The messages follow the Go compiler's where it has one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    #[error("invalid pipeline spec: {0}")]
    PipelineSpec(ProtoError),
    #[error("invalid platform spec: {0}")]
    PlatformSpec(ProtoError),
    #[error("invalid pipeline job: {0}")]
    PipelineJob(ProtoError),
    #[error("pipelineInfo.name is empty")]
    MissingPipelineName,
    #[error("invalid pipeline spec: root component is empty")]
    MissingRoot,
    #[error(
        "error processing component name={component:?}: cannot find component ref name={reference:?}"
    )]
    UnknownComponent {
        component: String,
        reference: String,
    },
    #[error(
        "error processing component name={component:?}: executor(label={label:?}) not found in deployment config"
    )]
    UnknownExecutor { component: String, label: String },
    /// A construct the Argo compiler does not implement (resolver, artifact iterator, ...).
    #[error("{0}")]
    Unsupported(String),
    /// Anything else, with the Go compiler's context chain.
    #[error("{0}")]
    Invalid(String),
}

impl CompileError {
    /// `context: error`, as Go's `fmt.Errorf("context: %w", err)` builds it.
    pub(crate) fn context(self, context: impl std::fmt::Display) -> Self {
        match self {
            CompileError::Unsupported(message) => {
                CompileError::Unsupported(format!("{context}: {message}"))
            }
            CompileError::Invalid(message) => {
                CompileError::Invalid(format!("{context}: {message}"))
            }
            other => CompileError::Invalid(format!("{context}: {other}")),
        }
    }
}
