//! What the team pages show: members, invitations, sessions, the audit log, the org switcher.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Role;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub user_id: Uuid,
    pub email: String,
    pub role: Role,
    pub verified: bool,
    pub joined: DateTime<Utc>,
}

/// An invitation as the members page lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvitationSummary {
    pub id: Uuid,
    pub email: String,
    pub role: Role,
    pub invited_by: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub accepted_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// As the server saw it (the browser has no clock to compare against here).
    pub state: InvitationState,
}

/// Where an invitation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InvitationState {
    Open,
    Expired,
    Accepted,
    Revoked,
}

impl InvitationState {
    /// The state of an invitation with these dates, at `now`.
    pub fn at(
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
        accepted_at: Option<DateTime<Utc>>,
        revoked_at: Option<DateTime<Utc>>,
    ) -> Self {
        if accepted_at.is_some() {
            InvitationState::Accepted
        } else if revoked_at.is_some() {
            InvitationState::Revoked
        } else if expires_at <= now {
            InvitationState::Expired
        } else {
            InvitationState::Open
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            InvitationState::Open => "open",
            InvitationState::Expired => "expired",
            InvitationState::Accepted => "accepted",
            InvitationState::Revoked => "revoked",
        }
    }

    /// Still waiting for its invitee (expired ones can be sent again).
    pub fn may_resend(self) -> bool {
        matches!(self, InvitationState::Open | InvitationState::Expired)
    }
}

/// The members page: who is in the org, the open and past invitations, and fresh keys for its forms
/// (one per form and row, minted at render).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MembersPage {
    pub me: Uuid,
    pub my_role: Role,
    pub org_name: String,
    pub members: Vec<Member>,
    pub invitations: Vec<InvitationSummary>,
    pub invite_key: Uuid,
    /// Per member: the change-role form's key and the remove button's.
    pub member_keys: Vec<(Uuid, Uuid)>,
    /// Per invitation: the resend button's key and the revoke button's.
    pub invitation_keys: Vec<(Uuid, Uuid)>,
}

/// One login of the user, for the sessions page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub id: Uuid,
    pub org_name: String,
    pub created_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
    pub user_agent: String,
    pub address: String,
    pub current: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: Uuid,
    pub at: DateTime<Utc>,
    pub actor: String,
    pub action: String,
    pub subject: String,
}

/// An org the user may switch to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrgChoice {
    pub id: Uuid,
    pub name: String,
    pub role: Role,
    pub current: bool,
}

/// What an invitation link shows before it is accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvitationView {
    pub org_name: String,
    pub email: String,
    pub role: Role,
    /// The address has an account: accepting asks for its password, not a new one.
    pub existing_account: bool,
}

/// The account settings page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountView {
    pub email: String,
    pub verified: bool,
    pub email_key: Uuid,
    pub verify_key: Uuid,
    /// The live API keys this account made, in every org: after a reset or a password change the
    /// owner reviews them here.
    pub api_keys: Vec<OwnApiKey>,
    /// Names the "revoke them all" attempt of this rendering.
    pub revoke_keys_key: Uuid,
}

/// A live API key the account made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnApiKey {
    pub org_name: String,
    pub name: String,
    pub prefix: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
}
