//! `sqlx::migrate!` embeds the migrations when this crate compiles; a new file in `migrations/` must
//! make it compile again.

fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
