//! An org's look: its logo (PNG bytes already re-encoded by the server; see `server::branding`),
//! accent colour and footer.

use model::OrgId;
use sqlx::{PgConnection, PgPool};

use model::{Branding, Logo};

/// `org`'s branding.
pub async fn of(conn: &mut PgConnection, org: OrgId) -> sqlx::Result<Branding> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"
        select o.accent_color, o.footer_text, l.token as "token?", l.width as "width?",
               l.height as "height?"
        from orgs o left join org_logos l on l.org_id = o.id
        where o.id = $1
        "#,
        org as _
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row
        .map(|r| Branding {
            accent_color: r.accent_color,
            footer_text: r.footer_text,
            logo: match (r.token, r.width, r.height) {
                (Some(token), Some(width), Some(height)) => Some(Logo {
                    token,
                    width: width as u32,
                    height: height as u32,
                }),
                _ => None,
            },
        })
        .unwrap_or_default())
}

/// Sets `org`'s accent colour and footer.
pub async fn save(
    tx: &mut PgConnection,
    org: OrgId,
    accent_color: Option<&str>,
    footer_text: &str,
) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "update orgs set accent_color = $2, footer_text = $3 where id = $1",
        org as _,
        accent_color,
        footer_text
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Replaces `org`'s logo with `png` (`width` × `height` pixels) under a new token.
pub async fn set_logo(
    tx: &mut PgConnection,
    org: OrgId,
    png: &[u8],
    width: u32,
    height: u32,
) -> sqlx::Result<()> {
    let token = crate::invoicing::link_token::mint();
    // language=PostgreSQL
    sqlx::query!(
        r#"
        insert into org_logos (org_id, token, png, width, height) values ($1, $2, $3, $4, $5)
        on conflict (org_id) do update
        set token = excluded.token, png = excluded.png, width = excluded.width,
            height = excluded.height, updated_at = now()
        "#,
        org as _,
        token,
        png,
        width as i32,
        height as i32,
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Removes `org`'s logo.
pub async fn remove_logo(tx: &mut PgConnection, org: OrgId) -> sqlx::Result<()> {
    // language=PostgreSQL
    sqlx::query!("delete from org_logos where org_id = $1", org as _)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// The logo file named `token` (None for an unknown or malformed one).
pub async fn logo_png(pool: &PgPool, token: &str) -> sqlx::Result<Option<Vec<u8>>> {
    if !crate::invoicing::link_token::well_formed(token) {
        return Ok(None);
    }
    // language=PostgreSQL
    sqlx::query_scalar!("select png from org_logos where token = $1", token)
        .fetch_optional(pool)
        .await
}

/// `org`'s logo as PNG bytes, for its PDFs and emails.
pub async fn logo_of(conn: &mut PgConnection, org: OrgId) -> sqlx::Result<Option<Vec<u8>>> {
    // language=PostgreSQL
    sqlx::query_scalar!("select png from org_logos where org_id = $1", org as _)
        .fetch_optional(&mut *conn)
        .await
}
