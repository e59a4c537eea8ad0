//! `metric_group!`: an area's metrics as one struct whose fields' doc comments are the help
//! text, so adding a metric is one field (name, type, doc) and nothing else to keep in step.

/// Declares `pub struct $group` with the given metric fields and `$group::register`, which
/// registers each field under its metric name (without the `pipewarden_` prefix) with its doc
/// comment as help. A field takes `Default::default()` unless `with <expr>` builds it.
macro_rules! metric_group {
    (
        $(#[$attr:meta])*
        pub struct $group:ident {
            $(
                $(#[doc = $doc:literal])+
                pub $field:ident: $ty:ty = $name:literal $(with $new:expr)?,
            )+
        }
    ) => {
        $(#[$attr])*
        pub struct $group {
            $( $(#[doc = $doc])+ pub $field: $ty, )+
        }

        impl $group {
            /// Registers every metric of the group, its doc comment as help.
            pub fn register(registry: &mut prometheus_client::registry::Registry) -> Self {
                let group = Self {
                    $( $field: metric_group!(@new $($new)?), )+
                };
                $(
                    registry.register(
                        $name,
                        $crate::metrics::group::help(&[$($doc),+]),
                        group.$field.clone(),
                    );
                )+
                group
            }

            /// One series of each metric, so its labels show in the encoded registry.
            #[cfg(test)]
            pub fn show_every_series(&self) {
                $( $crate::metrics::group::ShowSeries::show_series(&self.$field); )+
            }
        }
    };
    (@new) => { Default::default() };
    (@new $new:expr) => { $new };
}

/// The help text of a doc comment: its first paragraph on one line, without the final full
/// stop (the encoder adds one).
pub fn help(lines: &[&str]) -> String {
    let paragraph = lines
        .iter()
        .map(|line| line.trim())
        .take_while(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    paragraph.trim_end_matches('.').to_owned()
}

/// A metric that can show one series (a family: its label set's default), for the test that
/// reads every metric's labels from the encoded registry.
#[cfg(test)]
pub trait ShowSeries {
    fn show_series(&self);
}

#[cfg(test)]
mod show {
    use std::hash::Hash;

    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::{Family, MetricConstructor};
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::metrics::histogram::Histogram;

    use super::ShowSeries;

    // A metric without labels is always one series.
    impl ShowSeries for Counter {
        fn show_series(&self) {}
    }
    impl ShowSeries for Gauge {
        fn show_series(&self) {}
    }
    impl ShowSeries for Histogram {
        fn show_series(&self) {}
    }

    impl<S: Clone + Default + Hash + Eq, M, C: MetricConstructor<M>> ShowSeries for Family<S, M, C> {
        fn show_series(&self) {
            drop(self.get_or_create(&S::default()));
        }
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::registry::Registry;

    metric_group! {
        pub struct Example {
            /// Things counted,
            /// on two lines.
            ///
            /// Not in the help.
            pub things: Counter = "things",
        }
    }

    #[test]
    fn the_help_is_the_first_paragraph_of_the_doc_comment() {
        let mut registry = Registry::default();
        let example = Example::register(&mut registry);
        example.show_every_series();
        example.things.inc();
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("# HELP things Things counted, on two lines.\n"),
            "{text}"
        );
        assert!(text.contains("things_total 1"), "{text}");
    }
}
