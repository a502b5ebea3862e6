//! What reaches the screen while a request is retried.
//!
//! The rule: text is shown once. Text shown by a failed attempt is not shown
//! again by the next one; the next attempt's text is held back while it
//! repeats what is already on screen and shown from where it goes beyond.
//! If it says something different, a line break is shown and then the new
//! text in full, so nothing on screen is a silent mix of two answers.
//! Reasoning text follows the same rule on its own track.

use super::ChatEvent;

/// Forwards text deltas to the caller, deduplicating across attempts.
pub(crate) struct Echo<'a> {
    on_event: &'a mut (dyn FnMut(ChatEvent<'_>) + Send),
    text: Track,
    reasoning: Track,
}

/// What one kind of text showed so far, and what this attempt sent.
#[derive(Default)]
struct Track {
    shown: String,
    attempt: String,
}

impl Track {
    /// Takes a delta; calls `show` with what goes on screen.
    fn take(&mut self, delta: &str, mut show: impl FnMut(&str)) {
        self.attempt.push_str(delta);
        if self.attempt.len() <= self.shown.len() && self.shown.starts_with(&self.attempt) {
            return; // A replay of text already on screen.
        }
        if self.attempt.starts_with(&self.shown) {
            show(&self.attempt[self.shown.len()..]);
        } else {
            show("\n");
            show(&self.attempt);
        }
        self.shown.clone_from(&self.attempt);
    }
}

impl<'a> Echo<'a> {
    pub(crate) fn new(on_event: &'a mut (dyn FnMut(ChatEvent<'_>) + Send)) -> Self {
        Echo {
            on_event,
            text: Track::default(),
            reasoning: Track::default(),
        }
    }

    /// A new attempt starts: its text is compared with what is on screen.
    pub(crate) fn start_attempt(&mut self) {
        self.text.attempt.clear();
        self.reasoning.attempt.clear();
    }

    /// Passes a non-text event through.
    pub(crate) fn event(&mut self, event: ChatEvent<'_>) {
        (self.on_event)(event);
    }

    /// Takes a text delta of the current attempt.
    pub(crate) fn text(&mut self, delta: &str) {
        let on_event = &mut self.on_event;
        self.text
            .take(delta, |text| on_event(ChatEvent::Text(text)));
    }

    /// Takes a reasoning delta of the current attempt.
    pub(crate) fn reasoning(&mut self, delta: &str) {
        let on_event = &mut self.on_event;
        self.reasoning
            .take(delta, |text| on_event(ChatEvent::Reasoning(text)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(attempts: &[&[&str]]) -> String {
        let mut out = String::new();
        let mut sink = |event: ChatEvent<'_>| {
            if let ChatEvent::Text(text) = event {
                out.push_str(text);
            }
        };
        let mut echo = Echo::new(&mut sink);
        for deltas in attempts {
            echo.start_attempt();
            for delta in *deltas {
                echo.text(delta);
            }
        }
        out
    }

    #[test]
    fn a_retry_that_repeats_the_shown_text_adds_only_the_rest() {
        assert_eq!(
            screen(&[&["Hel", "lo wo"], &["Hello", " world", "!"]]),
            "Hello world!"
        );
    }

    #[test]
    fn a_retry_that_stops_short_of_the_shown_text_adds_nothing() {
        assert_eq!(screen(&[&["Hello world"], &["Hello"]]), "Hello world");
    }

    #[test]
    fn a_retry_that_diverges_starts_on_a_new_line() {
        assert_eq!(
            screen(&[&["Hello wo"], &["Hi", " there"]]),
            "Hello wo\nHi there"
        );
    }

    #[test]
    fn a_single_attempt_is_shown_as_it_comes() {
        assert_eq!(screen(&[&["a", "b", "c"]]), "abc");
    }
}
