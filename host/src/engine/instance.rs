//! One policy instance: a store with its limits, and the typed calls with their checks.

use std::time::Duration;

use wasmtime::{Store, Trap};

use super::bindings::{
    self, Eligibility, RebuildDecision, RebuildInput, RenderContext, Tombstone, WorkflowEvent,
};
use super::error::{Export, PolicyError, chain_message};
use super::store::StoreState;
use super::{Policy, ticker};

/// Guest stderr kept in a trap message: enough for a panic message and its location.
const TRAP_STDERR_CHARS: usize = 2048;

/// A live instance. Methods may be called repeatedly until one traps; after that every call
/// fails, because a trapped instance may hold broken state.
pub struct PolicyInstance {
    policy: Policy,
    store: Store<StoreState>,
    bindings: bindings::Policy,
    trapped: bool,
    /// One decision's instance: its first call's clock counts CPU time from the start of
    /// instantiation to the end of that call (see `CallClock`); a later call (render-swf
    /// after should-rebuild) gets a clock of its own.
    single_decision: bool,
    calls: u32,
}

impl PolicyInstance {
    /// `first` is the export about to be called, for error attribution, when the instance is
    /// for that one decision; instantiation runs under its deadline.
    pub(crate) fn new(policy: &Policy, first: Option<Export>) -> Result<Self, PolicyError> {
        let single_decision = first.is_some();
        let export = first.unwrap_or(Export::ValidateSettings);
        let inner = &policy.inner;
        let state = StoreState::new(
            inner.label.clone(),
            policy.settings.clone(),
            inner.options.memory_limit,
        );
        let mut store = Store::new(&inner.engine, state);
        store.limiter(|state| &mut state.memory);
        store.epoch_deadline_callback(|mut store| Ok(store.data_mut().clock.check()));
        let budget = policy.timeout_for(export);
        store.data_mut().clock = if single_decision {
            ticker::CallClock::start_anchored(budget)
        } else {
            ticker::CallClock::start(budget)
        };
        store.set_epoch_deadline(ticker::CallClock::FIRST_DEADLINE);
        match inner.pre.instantiate(&mut store) {
            Ok(bindings) => Ok(PolicyInstance {
                policy: policy.clone(),
                store,
                bindings,
                trapped: false,
                single_decision,
                calls: 0,
            }),
            Err(error) => {
                let classified = classify(&store, export, policy.timeout_for(export), error);
                Err(match classified {
                    PolicyError::Trap { export, message } => {
                        PolicyError::Instantiate { export, message }
                    }
                    other => other,
                })
            }
        }
    }

    pub fn validate_settings(&mut self, settings: &str) -> Result<(), PolicyError> {
        let export = Export::ValidateSettings;
        self.check_input(export, settings.len())?;
        let result = self.call(export, |b, store| b.call_validate_settings(store, settings))?;
        result.map_err(|message| self.guest_error(export, message))
    }

    pub fn should_rebuild(&mut self, input: &RebuildInput) -> Result<RebuildDecision, PolicyError> {
        let export = Export::ShouldRebuild;
        self.check_input(export, input.swf.len())?;
        let decision = self.call(export, |b, store| b.call_should_rebuild(store, input))?;
        let (RebuildDecision::Rebuild(reason) | RebuildDecision::Skip(reason)) = &decision;
        self.check_output(export, reason.len())?;
        Ok(decision)
    }

    pub fn render_swf(
        &mut self,
        swf: &str,
        context: &RenderContext,
    ) -> Result<String, PolicyError> {
        let export = Export::RenderSwf;
        self.check_input(export, swf.len() + context.settings.len())?;
        let result = self.call(export, |b, store| b.call_render_swf(store, swf, context))?;
        let rendered = result.map_err(|message| self.guest_error(export, message))?;
        self.check_output(export, rendered.len())?;
        check_render_identity(swf, &rendered)
            .map_err(|reason| PolicyError::BadOutput { export, reason })?;
        Ok(rendered)
    }

    pub fn exit_eligibility(
        &mut self,
        event: &WorkflowEvent,
        tombstone: Option<&Tombstone>,
    ) -> Result<Eligibility, PolicyError> {
        let export = Export::ExitEligibility;
        self.check_input(export, event.workflow.len())?;
        let eligibility = self.call(export, |b, store| {
            b.call_exit_eligibility(store, event, tombstone)
        })?;
        let reason_len = match &eligibility {
            Eligibility::Process => 0,
            Eligibility::Skip(r) | Eligibility::RejectStale(r) | Eligibility::Requeue(r) => r.len(),
        };
        self.check_output(export, reason_len)?;
        Ok(eligibility)
    }

    fn call<R>(
        &mut self,
        export: Export,
        f: impl FnOnce(&bindings::Policy, &mut Store<StoreState>) -> wasmtime::Result<R>,
    ) -> Result<R, PolicyError> {
        if self.trapped {
            return Err(PolicyError::Trap {
                export,
                message: "instance is unusable after an earlier trap".into(),
            });
        }
        let timeout = self.policy.timeout_for(export);
        // A one-decision instance's first call keeps the clock it started with: instantiation
        // and call share the deadline, and the CPU clock is read once.
        let first = self.single_decision && self.calls == 0;
        self.calls += 1;
        if !first {
            self.store.data_mut().clock = ticker::CallClock::start(timeout);
            self.store
                .set_epoch_deadline(ticker::CallClock::FIRST_DEADLINE);
        }
        f(&self.bindings, &mut self.store).map_err(|error| {
            self.trapped = true;
            classify(&self.store, export, timeout, error)
        })
    }

    fn check_input(&self, export: Export, size: usize) -> Result<(), PolicyError> {
        let limit = self.policy.inner.options.max_input_bytes;
        if size > limit {
            return Err(PolicyError::InputTooLarge {
                export,
                size,
                limit,
            });
        }
        Ok(())
    }

    fn check_output(&self, export: Export, size: usize) -> Result<(), PolicyError> {
        let limit = self.policy.inner.options.max_output_bytes;
        if size > limit {
            return Err(PolicyError::BadOutput {
                export,
                reason: format!("{size} bytes returned, over the {limit}-byte limit"),
            });
        }
        Ok(())
    }

    fn guest_error(&self, export: Export, message: String) -> PolicyError {
        if let Err(too_large) = self.check_output(export, message.len()) {
            return too_large;
        }
        PolicyError::Guest { export, message }
    }
}

impl Drop for PolicyInstance {
    fn drop(&mut self) {
        self.store.data().flush_stdio();
    }
}

fn classify(
    store: &Store<StoreState>,
    export: Export,
    timeout: Duration,
    error: wasmtime::Error,
) -> PolicyError {
    if store.data().memory.exceeded {
        return PolicyError::OutOfMemory {
            export,
            limit: store.data().memory.limit(),
        };
    }
    if let Some(Trap::Interrupt) = error.downcast_ref::<Trap>() {
        return PolicyError::Timeout {
            export,
            limit: timeout,
        };
    }
    let mut message = chain_message(&error);
    let stderr = store.data().stderr_text();
    if !stderr.is_empty() {
        let skip = stderr.chars().count().saturating_sub(TRAP_STDERR_CHARS);
        message.push_str("; guest stderr: ");
        message.extend(stderr.chars().skip(skip));
    }
    PolicyError::Trap { export, message }
}

/// A render must describe the same object it was given.
fn check_render_identity(live: &str, rendered: &str) -> Result<(), String> {
    let rendered: Identity =
        serde_json::from_str(rendered).map_err(|e| format!("render is not a JSON object: {e}"))?;
    let live: Identity = serde_json::from_str(live).unwrap_or_default();
    if live != rendered {
        return Err(format!("render describes {rendered}, not {live}"));
    }
    Ok(())
}

/// What names an object. Read without building the rest of it: the text is still checked to
/// be JSON, but the spec is skipped over, not copied.
#[derive(Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Identity {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    metadata: IdentityMetadata,
}

#[derive(Default, PartialEq, serde::Deserialize)]
struct IdentityMetadata {
    namespace: Option<String>,
    name: Option<String>,
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        write!(
            f,
            "{} {} {}/{}",
            show(&self.api_version),
            show(&self.kind),
            show(&self.metadata.namespace),
            show(&self.metadata.name)
        )
    }
}
