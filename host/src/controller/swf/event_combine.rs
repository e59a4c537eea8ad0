//! Routine per-SWF Events, combined per namespace once a mass rebuild makes them noise. The
//! first [`OWN_EVENTS`] of a reason in a namespace within [`WINDOW`] are the SWFs' own, as
//! before; later ones are counted into one Event about the namespace, created at the next
//! summary with the count and the first names. These are the numbers client-go's Event
//! correlator combines similar Events at (10 within 10 minutes). Each SWF still has its stamps,
//! its decision log line and its count in `pipewarden_swf_decisions_total`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Per-SWF Events of one reason per namespace within a window.
pub const OWN_EVENTS: u32 = 10;
/// The window those are counted in.
pub const WINDOW: Duration = Duration::from_secs(600);
/// SWFs named in a combined Event.
const NAMES: usize = 10;
/// Longest SWF name kept (Kubernetes names are at most 253 bytes).
const NAME_BYTES: usize = 253;

/// Whether an Event goes out on its own or is combined.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    Own,
    Combined,
}

/// One combined Event to create: `count` SWFs of `reason` in `namespace`.
#[derive(Debug, PartialEq, Eq)]
pub struct Combined {
    pub namespace: String,
    pub reason: String,
    pub count: u64,
    pub first: Vec<String>,
    /// The note of the last Event combined (target and policy), for the combined one.
    pub last_note: String,
}

#[derive(Default)]
pub struct Combiner {
    windows: HashMap<(String, String), Window>,
}

struct Window {
    started: Instant,
    own: u32,
    combined: u64,
    first: Vec<String>,
    last_note: String,
}

impl Combiner {
    /// Routes one Event of `reason` about SWF `name` in `namespace`.
    pub fn route(
        &mut self,
        namespace: &str,
        name: &str,
        reason: &str,
        note: &str,
        now: Instant,
    ) -> Route {
        let window = self
            .windows
            .entry((namespace.to_owned(), reason.to_owned()))
            .or_insert_with(|| Window::new(now));
        if now.duration_since(window.started) >= WINDOW && window.combined == 0 {
            *window = Window::new(now);
        }
        if window.own < OWN_EVENTS {
            window.own += 1;
            return Route::Own;
        }
        window.combined += 1;
        if window.first.len() < NAMES {
            window.first.push(truncate(name, NAME_BYTES).to_owned());
        }
        window.last_note = note.to_owned();
        Route::Combined
    }

    /// The combined Events due now, and windows that ended forgotten.
    pub fn take(&mut self, now: Instant) -> Vec<Combined> {
        let mut due = Vec::new();
        for ((namespace, reason), window) in &mut self.windows {
            if window.combined > 0 {
                due.push(Combined {
                    namespace: namespace.clone(),
                    reason: reason.clone(),
                    count: window.combined,
                    first: std::mem::take(&mut window.first),
                    last_note: std::mem::take(&mut window.last_note),
                });
                window.combined = 0;
            }
        }
        self.windows
            .retain(|_, window| now.duration_since(window.started) < WINDOW);
        due.sort_by(|a, b| (&a.namespace, &a.reason).cmp(&(&b.namespace, &b.reason)));
        due
    }
}

impl Window {
    fn new(now: Instant) -> Self {
        Window {
            started: now,
            own: 0,
            combined: 0,
            first: Vec::new(),
            last_note: String::new(),
        }
    }
}

impl Combined {
    /// The combined Event's note, within `max_bytes`.
    pub fn note(&self, max_bytes: usize) -> String {
        let more = self.count as usize > self.first.len();
        let note = format!(
            "{} more SWFs in this namespace: {}{} ({} per namespace within {} get an Event of \
             their own; each SWF's decision is in the controller's log). The last: {}",
            self.count,
            self.first.join(", "),
            if more { ", ..." } else { "" },
            OWN_EVENTS,
            humantime::format_duration(WINDOW),
            self.last_note
        );
        truncate(&note, max_bytes).to_owned()
    }
}

/// `text` cut to at most `max` bytes at a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(c: &mut Combiner, ns: &str, i: usize, now: Instant) -> Route {
        c.route(ns, &format!("swf-{i}"), "Rebuilt", "Target 2.17.0.", now)
    }

    #[test]
    fn the_first_ten_per_namespace_are_their_own_and_the_rest_one_event() {
        let mut c = Combiner::default();
        let now = Instant::now();
        let routes: Vec<Route> = (0..25).map(|i| route(&mut c, "team-a", i, now)).collect();
        assert!(routes[..10].iter().all(|r| *r == Route::Own));
        assert!(routes[10..].iter().all(|r| *r == Route::Combined));
        // Another namespace, or another reason, has its own ten.
        assert_eq!(route(&mut c, "team-b", 0, now), Route::Own);
        assert_eq!(c.route("team-a", "x", "WouldRebuild", "", now), Route::Own);
        let due = c.take(now);
        assert_eq!(due.len(), 1);
        assert_eq!((due[0].namespace.as_str(), due[0].count), ("team-a", 15));
        assert_eq!(due[0].first.len(), 10);
        assert_eq!(due[0].first[0], "swf-10");
        let note = due[0].note(1024);
        assert!(
            note.starts_with("15 more SWFs in this namespace: swf-10, "),
            "{note}"
        );
        assert!(
            note.contains(", ... (10 per namespace within 10m"),
            "{note}"
        );
        assert!(note.ends_with("The last: Target 2.17.0."), "{note}");
        assert!(c.take(now).is_empty(), "said once");
    }

    #[test]
    fn a_new_window_gives_ten_own_events_again_and_old_windows_are_forgotten() {
        let mut c = Combiner::default();
        let start = Instant::now();
        for i in 0..12 {
            route(&mut c, "team-a", i, start);
        }
        assert_eq!(c.take(start)[0].count, 2);
        let later = start + WINDOW;
        assert_eq!(route(&mut c, "team-a", 99, later), Route::Own);
        assert!(c.take(later + WINDOW).is_empty());
        assert!(c.windows.is_empty(), "ended windows are dropped");
    }

    #[test]
    fn a_combined_note_stays_within_its_bound_whatever_the_names() {
        let mut c = Combiner::default();
        let now = Instant::now();
        let long = "é".repeat(400);
        for _ in 0..30 {
            c.route("team-a", &long, "Rebuilt", &"n".repeat(5000), now);
        }
        let due = c.take(now);
        assert!(due[0].first.iter().all(|n| n.len() <= NAME_BYTES));
        assert!(due[0].note(1024).len() <= 1024);
    }
}
