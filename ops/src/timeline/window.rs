//! The window a timeline shows, from `--from` and `--to` (read by
//! [`crate::time::parse_time`]).

use engine::time::Nanos;

use crate::time::rfc3339;

/// `--from` is not before `--to`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the window is empty: --from {} is not before --to {}", rfc3339(*from), rfc3339(*to))]
pub struct EmptyWindow {
    /// Left edge.
    pub from: Nanos,
    /// Right edge.
    pub to: Nanos,
}

/// The shown time range, `from` < `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Left edge.
    pub from: Nanos,
    /// Right edge.
    pub to: Nanos,
}

impl Window {
    /// A window; refused unless `from` is before `to`.
    pub fn new(from: Nanos, to: Nanos) -> Result<Window, EmptyWindow> {
        if from >= to {
            return Err(EmptyWindow { from, to });
        }
        Ok(Window { from, to })
    }

    /// Whether `t` is inside, edges included.
    pub fn contains(&self, t: Nanos) -> bool {
        (self.from..=self.to).contains(&t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_window_is_refused() {
        assert!(Window::new(5, 5).unwrap_err().to_string().contains("is not before --to"));
        assert!(Window::new(6, 5).is_err());
        let w = Window::new(5, 9).unwrap();
        assert!(w.contains(5) && w.contains(9) && !w.contains(10));
    }
}
