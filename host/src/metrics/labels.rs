//! Label sets of the metrics, and [`Label`]: a label value that is one of a closed set, so a
//! misspelt value is a compile error rather than a new series.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};

use crate::engine::PolicyErrorKind;
use crate::exit::decision::{ExitDecision, Step};
use crate::swf::outcome::SwfDecision;

/// A label value from a closed set (an enum), as Prometheus shows it.
pub trait Label: Copy + Sized + 'static {
    /// Every value.
    const ALL: &'static [Self];

    fn label(&self) -> &'static str;

    /// The value shown as `text`, if any (for tests that name a series by its label).
    fn from_label(text: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|value| value.label() == text)
    }
}

/// Makes each enum a [`Label`] (by its own `label` and `ALL`), a label value and `Display`.
macro_rules! labels {
    ($($ty:ident),* $(,)?) => {
        $(
            impl Label for $ty {
                const ALL: &'static [Self] = &$ty::ALL;

                fn label(&self) -> &'static str {
                    $ty::label(*self)
                }
            }

            impl EncodeLabelValue for $ty {
                fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
                    EncodeLabelValue::encode(&$ty::label(*self), encoder)
                }
            }

            impl std::fmt::Display for $ty {
                fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str($ty::label(*self))
                }
            }
        )*
    };
}

labels!(SwfDecision, ExitDecision, Step, PolicyErrorKind);

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: String,
}

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StepLabel {
    pub step: Step,
}

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SwfDecisionLabel {
    pub outcome: SwfDecision,
}

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ExitDecisionLabel {
    pub outcome: ExitDecision,
}

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ExportLabel {
    pub export: String,
}

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: String,
}

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WatchLabel {
    pub watch: String,
}

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SinkOutcomeLabels {
    pub sink: String,
    pub outcome: String,
}

/// The KFP version SWFs are rendered for, whether the policy compiles for it (`true`,
/// `false`, or `unknown` while neither its probe answer nor a decision said), how its renders
/// are proven (`own-compiler-output`, `same-compiler`, `unknown`), who writes SWFs on the
/// install (`pipewarden`, `kfp-api`) and why the SWF loop writes nothing (`none` when it
/// writes).
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TargetLabels {
    pub version: String,
    pub supported: String,
    pub proof: String,
    pub owner: String,
    pub reason: String,
}

#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PolicyErrorLabels {
    pub export: String,
    pub kind: PolicyErrorKind,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each closed set shows distinct values, each read back as itself.
    fn round_trips<L: Label + PartialEq + std::fmt::Debug>() {
        let shown: std::collections::BTreeSet<_> = L::ALL.iter().map(|l| l.label()).collect();
        assert_eq!(shown.len(), L::ALL.len(), "{:?}", L::ALL);
        for value in L::ALL {
            assert_eq!(L::from_label(value.label()), Some(*value));
        }
    }

    #[test]
    fn every_label_value_is_distinct_and_reads_back() {
        round_trips::<SwfDecision>();
        round_trips::<ExitDecision>();
        round_trips::<Step>();
        round_trips::<PolicyErrorKind>();
        assert_eq!(
            ExitDecision::from_label("reject-stale"),
            Some(ExitDecision::RejectStale)
        );
        assert_eq!(PolicyErrorKind::Guest.to_string(), "guest_error");
    }
}
