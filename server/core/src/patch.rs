//! RFC 7396 JSON merge patch, as the API's PATCH endpoints take their edits.

use serde_json::Value;

/// Objects merge key by key, `null` removes, anything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    let target = target.as_object_mut().expect("made an object above");
    for (name, value) in fields {
        if value.is_null() {
            target.remove(name);
        } else {
            merge_patch(target.entry(name.clone()).or_insert(Value::Null), value);
        }
    }
}

/// `current` with `patch` merged in, read back as a `T` (serde's reason when it is not one).
pub fn patched<T>(current: &T, patch: &Value) -> Result<T, String>
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let mut merged = serde_json::to_value(current).expect("inputs serialise");
    merge_patch(&mut merged, patch);
    serde_json::from_value(merged).map_err(|e| e.to_string())
}
