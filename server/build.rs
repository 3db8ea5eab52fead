//! Finds the fonts the invoice PDF embeds (DejaVu Sans, Debian's `fonts-dejavu-core`), so the binary
//! carries them and needs no font files where it runs. `PDF_FONT_DIR` points elsewhere.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=PDF_FONT_DIR");
    let dir = std::env::var_os("PDF_FONT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/share/fonts/truetype/dejavu"));
    for (var, file) in [
        ("INVOICER_PDF_FONT_REGULAR", "DejaVuSans.ttf"),
        ("INVOICER_PDF_FONT_BOLD", "DejaVuSans-Bold.ttf"),
    ] {
        let path = dir.join(file);
        if !path.is_file() {
            panic!(
                "{} is missing: install Debian's fonts-dejavu-core (scripts/lib.sh does) or set \
                 PDF_FONT_DIR to a folder holding {file}",
                path.display()
            );
        }
        println!("cargo:rerun-if-changed={}", path.display());
        println!("cargo:rustc-env={var}={}", path.display());
    }
}
