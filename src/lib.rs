//! The browser side of invoicer: makes the page's islands interactive. The rest of each page is
//! server HTML, and stays so.

// Links the app crate in: its `#[island]` components are exported from this module.
use app as _;

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_islands();
}
