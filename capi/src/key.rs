//! Key derivation over JSON text (SPEC §2) for C callers.

use std::ffi::c_char;

use crate::boundary::{copy_out, guard, optional_str, required_str, str_array, Fault};
use crate::call::null_explicit_key;
use crate::tool::IdemkitStrategy;
use crate::IdemkitStatus;
use idemkit_core::key::{canonical_material, derive_key, KeyInput, KeyScope};

/// What a key is derived from. Zero-initialise it and set the fields you need:
///
/// ```c
/// idemkit_key_request request = {0};
/// request.scope = "book";
/// request.strategy = IDEMKIT_STRATEGY_HASH_INPUT;
/// request.data = "{\"flight\":\"BA117\"}";
/// ```
///
/// All text is UTF-8 and NUL-terminated, and only read during the call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IdemkitKeyRequest {
    /// The tool or action name (required).
    pub scope: *const c_char,
    /// The tenant, or NULL for none (`""` is a tenant, distinct from NULL).
    pub tenant: *const c_char,
    /// The run, or NULL for none. A new run is a new key.
    pub run: *const c_char,
    /// An `idemkit_strategy`: `IDEMKIT_STRATEGY_HASH_INPUT` (0, `data` is JSON text) or
    /// `IDEMKIT_STRATEGY_EXPLICIT` (`data` is the supplied key).
    pub strategy: i32,
    /// The input as JSON text (`HASH_INPUT`, required), or the supplied key (`EXPLICIT`; a
    /// NULL, empty or blank key is refused with `IDEMKIT_STATUS_INVALID_KEY`).
    pub data: *const c_char,
    /// For `HASH_INPUT`: the names of the input members that identify the effect; NULL with
    /// `key_argument_count` 0 for the whole input.
    pub key_arguments: *const *const c_char,
    /// How many names `key_arguments` holds.
    pub key_argument_count: usize,
}

/// Derives the key of a request (SPEC §2): the lowercase hex SHA-256 of the canonical JSON
/// material `["idemkit/v1",tenant,run,scope,tag,data]`.
///
/// - `key_out` (required, at least 65 bytes, caller-owned) gets the 64 hex characters and a NUL.
/// - `material_out` (may be NULL, caller-owned, `material_len` bytes) gets the canonical material,
///   NUL-terminated. `*material_needed` (when not NULL) gets the size it needs, NUL included;
///   when `material_len` is smaller the answer is `IDEMKIT_STATUS_BUFFER_TOO_SMALL` (the key is
///   still written). `material_out = NULL` with `material_len = 0` skips the material (its size
///   still goes to `*material_needed`).
///
/// Input the spec refuses (not strict JSON, a duplicate member after NFC, a lone surrogate
/// escape, NaN, nesting deeper than 64, a number literal over 1000 characters or an exponent
/// beyond ±9999, a blank explicit key, a missing key argument) answers
/// `IDEMKIT_STATUS_INVALID_KEY`, and nothing is written but empty strings.
///
/// # Safety
/// `request` is NULL or a valid request whose pointers follow its field docs; `key_out` is
/// NULL or writable for `key_len` bytes; `material_out` is NULL or writable for `material_len`
/// bytes; `material_needed` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn idemkit_derive_key(
    request: *const IdemkitKeyRequest,
    key_out: *mut c_char,
    key_len: usize,
    material_out: *mut c_char,
    material_len: usize,
    material_needed: *mut usize,
) -> IdemkitStatus {
    guard(|| {
        let request = request.as_ref().ok_or_else(|| Fault::null("request"))?;
        if key_out.is_null() {
            return Err(Fault::null("key_out"));
        }
        if key_len > 0 {
            *key_out = 0;
        }
        if !material_out.is_null() && material_len > 0 {
            *material_out = 0;
        }
        let scope = KeyScope {
            scope: required_str(request.scope, "request.scope")?,
            tenant: optional_str(request.tenant, "request.tenant")?,
            run: optional_str(request.run, "request.run")?,
        };
        let data = optional_str(request.data, "request.data")?;
        let key_arguments = str_array(
            request.key_arguments,
            request.key_argument_count,
            "request.key_arguments",
        )?;
        let input = match IdemkitStrategy::from_code(request.strategy) {
            Some(IdemkitStrategy::HashInput) => {
                KeyInput::Json(data.ok_or_else(|| Fault::null("request.data"))?)
            }
            Some(IdemkitStrategy::Explicit) => {
                KeyInput::Explicit(data.ok_or_else(|| null_explicit_key(scope.scope))?)
            }
            _ => {
                return Err(Fault::invalid(format!(
                    "request.strategy is {}; keys are derived only for IDEMKIT_STRATEGY_HASH_INPUT ({}) and IDEMKIT_STRATEGY_EXPLICIT ({})",
                    request.strategy,
                    IdemkitStrategy::HashInput as i32,
                    IdemkitStrategy::Explicit as i32
                )))
            }
        };
        let invalid =
            |e: idemkit_core::key::KeyError| Fault::new(IdemkitStatus::InvalidKey, e.to_string());
        let key = derive_key(&scope, input, &key_arguments).map_err(invalid)?;
        copy_out(
            &key.hex(),
            key_out,
            key_len,
            std::ptr::null_mut(),
            "key_out",
        )?;
        if !material_out.is_null() || !material_needed.is_null() {
            let material = canonical_material(&scope, input, &key_arguments).map_err(invalid)?;
            copy_out(
                &material,
                material_out,
                material_len,
                material_needed,
                "material_out",
            )?;
        }
        Ok(())
    })
}
