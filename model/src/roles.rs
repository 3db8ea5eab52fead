//! Roles and what each may do: one table, read by the server (the authority) and by the pages (which
//! hide what a role cannot do).

use serde::{Deserialize, Serialize};

/// A member's role in an org, lowest first: `Ord` is "may do at least as much".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Role {
    /// Reads everything of the org, changes nothing.
    Viewer,
    /// Invoices, customers, payments, emails to customers, their own API keys.
    Member,
    /// Everything: the org's settings, members, invitations, every API key, the audit log.
    Owner,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Owner, Role::Member, Role::Viewer];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Member => "member",
            Role::Viewer => "viewer",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "owner" => Some(Role::Owner),
            "member" => Some(Role::Member),
            "viewer" => Some(Role::Viewer),
            _ => None,
        }
    }

    /// A role read back from the database, where the column's check allows only the three names; anything
    /// else reads as the least role.
    pub fn stored(s: &str) -> Role {
        Role::parse(s).unwrap_or(Role::Viewer)
    }

    pub fn label(self) -> &'static str {
        match self {
            Role::Owner => "Owner",
            Role::Member => "Member",
            Role::Viewer => "Viewer",
        }
    }

    pub fn may(self, action: Action) -> bool {
        self >= action.least_role()
    }
}

/// Everything a request can ask for, by what it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    /// Any page or list of the org: invoices, customers, payments, activity, settings, members.
    Read,
    /// Create and change invoices and customers, take payments, void, duplicate, retry an email.
    EditInvoices,
    /// Email an invoice to its customer (also needs a verified address).
    SendEmail,
    /// Create API keys (with a role no higher than one's own; needs a verified address) and revoke
    /// one's own.
    ManageOwnApiKeys,
    /// Revoke anyone's API key.
    ManageAllApiKeys,
    /// The org's settings: address, numbering, time zone, tax rates.
    ManageOrg,
    /// Invite, change roles, remove members.
    ManageMembers,
    /// Read the audit log.
    ReadAudit,
    /// Delete a payment recorded by hand (a correction: audited).
    DeletePayments,
}

impl Action {
    pub const ALL: [Action; 9] = [
        Action::Read,
        Action::EditInvoices,
        Action::SendEmail,
        Action::ManageOwnApiKeys,
        Action::ManageAllApiKeys,
        Action::ManageOrg,
        Action::ManageMembers,
        Action::ReadAudit,
        Action::DeletePayments,
    ];

    pub fn least_role(self) -> Role {
        match self {
            Action::Read => Role::Viewer,
            Action::EditInvoices | Action::SendEmail | Action::ManageOwnApiKeys => Role::Member,
            Action::ManageAllApiKeys
            | Action::ManageOrg
            | Action::ManageMembers
            | Action::ReadAudit
            | Action::DeletePayments => Role::Owner,
        }
    }

    /// Actions that reach other people's inboxes or make credentials: not before the address is
    /// proved.
    pub fn needs_verified_email(self) -> bool {
        matches!(self, Action::SendEmail | Action::ManageOwnApiKeys)
    }

    pub fn describe(self) -> &'static str {
        match self {
            Action::Read => "read the org's invoices, customers, activity and settings",
            Action::EditInvoices => "create and change invoices, customers and payments",
            Action::SendEmail => "email invoices to customers",
            Action::ManageOwnApiKeys => "create API keys and revoke their own",
            Action::ManageAllApiKeys => "revoke anyone's API key",
            Action::ManageOrg => "change the org's settings and tax rates",
            Action::ManageMembers => "invite, change roles and remove members",
            Action::ReadAudit => "read the audit log",
            Action::DeletePayments => "delete payments recorded by hand",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_parse_what_they_print() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("admin"), None);
        assert_eq!(Role::parse("Owner"), None);
    }

    #[test]
    fn a_higher_role_may_do_everything_a_lower_one_may() {
        for action in Action::ALL {
            for (low, high) in [(Role::Viewer, Role::Member), (Role::Member, Role::Owner)] {
                assert!(!low.may(action) || high.may(action), "{action:?}");
            }
        }
    }
}
