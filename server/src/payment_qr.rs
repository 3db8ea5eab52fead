//! The payment QR code (EPC069-12, its text from [`PublicInvoice::transfer_qr`]) drawn: an SVG
//! for the customer's page (no script, no image request) and its dark modules for the PDF, where
//! they are drawn as vector squares. Error correction level M, as the standard asks.
//!
//! [`PublicInvoice::transfer_qr`]: invoicer_core::invoicing::public::PublicInvoice::transfer_qr

use std::fmt::Write;

use qrcode::{Color, EcLevel, QrCode};

/// The light margin around the code, in modules (the QR standard's quiet zone).
pub const QUIET: usize = 4;

/// The code's side in modules, and its dark modules as (column, row).
pub struct Modules {
    pub side: usize,
    pub dark: Vec<(usize, usize)>,
}

/// `payload`'s code; `None` when it does not fit a QR code (it always does at ≤ 331 bytes).
pub fn modules(payload: &str) -> Option<Modules> {
    let code = QrCode::with_error_correction_level(payload.as_bytes(), EcLevel::M).ok()?;
    let side = code.width();
    let dark = code
        .to_colors()
        .into_iter()
        .enumerate()
        .filter(|(_, c)| *c == Color::Dark)
        .map(|(i, _)| (i % side, i / side))
        .collect();
    Some(Modules { side, dark })
}

/// The code as an inline SVG: one path of unit squares in a view box of modules (quiet zone
/// included), on white, scaled by the page's CSS.
pub fn svg(payload: &str, label: &str) -> Option<String> {
    let m = modules(payload)?;
    let full = m.side + 2 * QUIET;
    let mut path = String::with_capacity(m.dark.len() * 14);
    for (x, y) in &m.dark {
        let _ = write!(path, "M{} {}h1v1h-1z", x + QUIET, y + QUIET);
    }
    let label = label
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;");
    Some(format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {full} {full}" role="img" aria-label="{label}" shape-rendering="crispEdges"><rect width="{full}" height="{full}" fill="#fff"/><path d="{path}" fill="#000"/></svg>"##
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transfer_fits_and_draws_square() {
        let payload = "BCD\n002\n1\nSCT\nBPOTBEB1\nRed Cross of Belgium\nBE72000000001616\nEUR1.00\n\nRF18539007547034";
        let m = modules(payload).unwrap();
        assert!(
            m.side >= 21 && (m.side - 17).is_multiple_of(4),
            "a QR version's side"
        );
        assert!(m.dark.iter().all(|(x, y)| *x < m.side && *y < m.side));
        // The finder pattern's corner is dark in every QR code.
        assert!(m.dark.contains(&(0, 0)));
        let svg = svg(payload, "Scan \"to\" pay").unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("aria-label=\"Scan &quot;to&quot; pay\""));
        // The standard's longest text still fits.
        assert!(modules(&"x".repeat(model::epc_qr::MAX_BYTES)).is_some());
    }
}
