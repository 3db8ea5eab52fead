//! A secret the process holds (Stripe keys, webhook secrets, the metrics token, the SMTP URL with
//! its password): its `Debug` prints nothing of it, so no `{:?}` of a configuration, a setting or
//! an error leaks it. The value is read only through [`Secret::expose`].

use std::fmt;

#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value itself, for the one place that must use it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_blank(&self) -> bool {
        self.0.trim().is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Secret {
        Secret(value.to_owned())
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Secret {
        Secret(value)
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(value: &str) -> Result<Secret, Self::Err> {
        Ok(Secret::from(value))
    }
}

impl AsRef<str> for Secret {
    fn as_ref(&self) -> &str {
        self.expose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_prints_nothing_of_the_secret() {
        let s = Secret::from("sk_live_very_secret");
        assert_eq!(format!("{s:?}"), "Secret(..)");
        assert_eq!(format!("{:?}", Some(vec![s.clone()])), "Some([Secret(..)])");
        assert_eq!(s.expose(), "sk_live_very_secret");
    }
}
