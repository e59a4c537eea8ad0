//! A policy's Rust logic answering through the [`Decisions`] seam without a component: for a
//! policy crate's own tests and benchmarks, and for comparing a component with the code it was
//! built from. The types cross as they would the component boundary.

use std::marker::PhantomData;

use pipewarden_guest as guest;

use super::{
    Decisions, Eligibility, EventKind, Export, PolicyError, RebuildDecision, RebuildInput,
    RebuildPolicy, RenderContext, Tombstone, WorkflowEvent,
};

/// The exports of `P` (a `pipewarden_guest::Policy`), called directly; its `settings` import
/// answers with this adapter's settings, on the calling thread.
pub struct Native<P> {
    settings: String,
    policy: PhantomData<fn() -> P>,
}

impl<P: guest::Policy> Native<P> {
    /// `settings` answer the policy's `settings` import (`{}` when it has none).
    pub fn new(settings: &str) -> Self {
        Native {
            settings: settings.to_owned(),
            policy: PhantomData,
        }
    }

    fn in_force(&self) {
        guest::settings::set_native(&self.settings);
    }
}

impl<P: guest::Policy> Decisions for Native<P> {
    fn with_settings(&self, settings: &str) -> Self {
        Native::new(settings)
    }

    fn validate_settings(&self, settings: &str) -> Result<(), PolicyError> {
        self.in_force();
        P::validate_settings(settings.to_owned())
            .map_err(|message| guest_error(Export::ValidateSettings, message))
    }

    fn should_rebuild(&self, input: &RebuildInput) -> Result<RebuildDecision, PolicyError> {
        self.in_force();
        Ok(from_guest_decision(P::should_rebuild(to_guest_input(
            input,
        ))))
    }

    fn render_swf(&self, swf: &str, context: &RenderContext) -> Result<String, PolicyError> {
        self.in_force();
        let context = guest::RenderContext {
            target_version: context.target_version.clone(),
            settings: context.settings.clone(),
        };
        P::render_swf(swf.to_owned(), context)
            .map_err(|message| guest_error(Export::RenderSwf, message))
    }

    fn exit_eligibility(
        &self,
        event: &WorkflowEvent,
        tombstone: Option<&Tombstone>,
    ) -> Result<Eligibility, PolicyError> {
        self.in_force();
        let (event, tombstone) = to_guest_event(event, tombstone);
        Ok(from_guest_eligibility(P::exit_eligibility(
            event, tombstone,
        )))
    }
}

fn guest_error(export: Export, message: String) -> PolicyError {
    PolicyError::Guest { export, message }
}

/// A rebuild input as a policy compiled natively takes it.
pub fn to_guest_input(input: &RebuildInput) -> guest::RebuildInput {
    guest::RebuildInput {
        policy: match input.policy {
            RebuildPolicy::Disable => guest::RebuildPolicy::Disable,
            RebuildPolicy::Always => guest::RebuildPolicy::Always,
            RebuildPolicy::OnVersionChange => guest::RebuildPolicy::OnVersionChange,
        },
        swf: input.swf.clone(),
        target_version: input.target_version.clone(),
        stamps: guest::Stamps {
            version: input.stamps.version.clone(),
            render_hash: input.stamps.render_hash.clone(),
        },
        settings: input.settings.clone(),
    }
}

pub fn from_guest_decision(decision: guest::RebuildDecision) -> RebuildDecision {
    match decision {
        guest::RebuildDecision::Rebuild(reason) => RebuildDecision::Rebuild(reason),
        guest::RebuildDecision::Skip(reason) => RebuildDecision::Skip(reason),
    }
}

/// The event and tombstone as a policy compiled natively takes them.
pub fn to_guest_event(
    event: &WorkflowEvent,
    tombstone: Option<&Tombstone>,
) -> (guest::WorkflowEvent, Option<guest::Tombstone>) {
    let kind = match event.kind {
        EventKind::Added => guest::EventKind::Added,
        EventKind::Modified => guest::EventKind::Modified,
        EventKind::Deleted => guest::EventKind::Deleted,
        EventKind::Relisted => guest::EventKind::Relisted,
    };
    let event = guest::WorkflowEvent {
        kind,
        namespace: event.namespace.clone(),
        name: event.name.clone(),
        uid: event.uid.clone(),
        resource_version: event.resource_version.clone(),
        phase: event.phase.clone(),
        labels: event.labels.clone(),
        workflow: event.workflow.clone(),
    };
    let tombstone = tombstone.map(|t| guest::Tombstone {
        resource_version: t.resource_version.clone(),
        phase: t.phase.clone(),
        completed: t.completed,
        age_seconds: t.age_seconds,
    });
    (event, tombstone)
}

pub fn from_guest_eligibility(eligibility: guest::Eligibility) -> Eligibility {
    match eligibility {
        guest::Eligibility::Process => Eligibility::Process,
        guest::Eligibility::Skip(reason) => Eligibility::Skip(reason),
        guest::Eligibility::RejectStale(reason) => Eligibility::RejectStale(reason),
        guest::Eligibility::Requeue(reason) => Eligibility::Requeue(reason),
    }
}
