//! A progress bar (indicatif) that shows itself only once its work has taken a second, and only on a
//! terminal: short measurements print nothing extra.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::{Duration, Instant};

pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    shown: bool,
}

impl Progress {
    /// A bar for `len` steps (an upper bound when the work may stop early).
    pub fn new(label: &str, len: u64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template("{msg:>16} {bar:30} {pos}/{len} {elapsed}") {
            bar.set_style(style);
        }
        bar.set_message(label.to_string());
        Progress {
            bar,
            start: Instant::now(),
            shown: false,
        }
    }

    pub fn inc(&mut self) {
        self.bar.inc(1);
        if !self.shown && self.start.elapsed() >= Duration::from_secs(1) {
            self.shown = true;
            // Hidden again by indicatif itself when stderr is not a terminal.
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
