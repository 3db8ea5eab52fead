//! Customer imports as their page shows them.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The largest file read (bytes) and the most data rows in it.
pub const MAX_BYTES: usize = 2 * 1024 * 1024;
pub const MAX_ROWS: usize = 5000;

/// The columns a file may have (the header names them; any order; unknown ones are refused).
pub const COLUMNS: [&str; 12] = [
    "name",
    "email",
    "address_line1",
    "address_line2",
    "postal_code",
    "city",
    "region",
    "country",
    "vat_id",
    "buyer_reference",
    "locale",
    "notes",
];

/// One refused row: its line in the file (the header is line 1), the field, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowError {
    pub row: usize,
    pub field: String,
    pub message: String,
}

/// An import: its counts, where it stands, the refused rows and the first valid ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportView {
    pub id: Uuid,
    pub file_name: String,
    /// Data rows in the file.
    pub total: i32,
    /// Rows that are valid customers (what applying adds).
    pub valid: i32,
    /// How many of them were added so far.
    pub applied: i32,
    /// `previewed`, `applying` or `done`.
    pub status: String,
    pub errors: Vec<RowError>,
    /// The first valid rows: (line, name, email).
    pub sample: Vec<(i64, String, String)>,
    /// The key of this rendering's "Add" button (claimed once, like every form's).
    pub form_key: Uuid,
}
