//! `rocemend preview`: a playbook's rules and whole safety policy on a
//! recording, nothing sent (`ops::preview`, its actuators' routes and
//! dispatcher settings built by the wiring).

use super::Exit;
use crate::wiring::Wiring;

/// `rocemend preview`: with `--diff`, exit 1 when a decision differs, as `diff` does.
pub fn preview(request: &ops::preview::Request<'_>) -> anyhow::Result<Exit> {
    let previewed = ops::preview::preview(request, &Wiring)?;
    print!("{}", previewed.text);
    Ok(if previewed.differs { Exit::Findings } else { Exit::Ok })
}
