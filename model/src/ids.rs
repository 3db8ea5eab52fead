//! Ids that say what they name. A function taking an `OrgId` and an `InvoiceId` cannot be handed
//! the two the wrong way round, which two bare `Uuid`s can. On the server they bind and read as
//! the `uuid` they wrap (`org as _` in a checked query); on the wire they are the plain uuid.

use serde::{Deserialize, Serialize};
use std::fmt;
use uuid::Uuid;

macro_rules! ids {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        #[cfg_attr(feature = "server", derive(sqlx::Type), sqlx(transparent))]
        pub struct $name(Uuid);

        impl $name {
            pub const fn from_uuid(id: Uuid) -> Self {
                Self(id)
            }

            pub const fn uuid(self) -> Uuid {
                self.0
            }
        }

        impl From<Uuid> for $name {
            fn from(id: Uuid) -> Self {
                Self(id)
            }
        }

        impl From<$name> for Uuid {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl PartialEq<Uuid> for $name {
            fn eq(&self, other: &Uuid) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<$name> for Uuid {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    )*};
}

ids! {
    /// An organisation: the owner of every row a tenant sees.
    OrgId;
    /// An invoice (a draft until it is issued).
    InvoiceId;
    /// A customer of an org.
    CustomerId;
}
