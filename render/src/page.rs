//! The shell of a page: everything around its sections. A page is
//! `start(title, style)`, its sections, then [`END`].

use crate::escape;

/// The body style the pages share: one font, one margin.
pub const BODY_STYLE: &str = "body{font:14px sans-serif;margin:20px}";

/// The doctype, the head (its `title` escaped, `style` as given) and the
/// body's opening tag.
pub fn start(title: &str, style: &str) -> String {
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{}</title><style>{style}</style></head><body>",
        escape(title)
    )
}

/// What closes a page [`start`] opened.
pub const END: &str = "</body></html>";
