//! TLS to PostgreSQL: libpq's `sslmode` and `sslrootcert`, over rustls with its ring provider
//! (the crypto the `rediss://` store uses too), through `tokio-postgres-rustls`.
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `prefer` (default) | if the server offers it, else plain text | not checked |
//! | `require` | always; a server without TLS is refused | not checked, unless `sslrootcert` is given: then checked as `verify-ca` |
//! | `verify-ca` | always | signed by the CA of `sslrootcert` |
//! | `verify-full` | always | signed by the CA of `sslrootcert`, and made out to the host of the URL |
//!
//! As in libpq, except that no default root file (`~/.postgresql/root.crt`) is read:
//! `verify-ca` and `verify-full` need `sslrootcert=<path of a PEM file>`.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::StoreError;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub(super) fn from_name(name: &str, shown: &str) -> Result<SslMode, StoreError> {
        match name {
            "disable" => Ok(SslMode::Disable),
            "prefer" => Ok(SslMode::Prefer),
            "require" => Ok(SslMode::Require),
            "verify-ca" => Ok(SslMode::VerifyCa),
            "verify-full" => Ok(SslMode::VerifyFull),
            "allow" => Err(StoreError::Configuration(format!(
                "store URL {shown}: sslmode=allow (plain text first) is not supported; use sslmode=prefer, which tries TLS first"
            ))),
            other => Err(StoreError::Configuration(format!(
                "store URL {shown}: `sslmode={other}` is not a mode; use disable, prefer, require, verify-ca or verify-full"
            ))),
        }
    }

    /// How tokio-postgres negotiates: never, if offered, or always.
    pub(super) fn negotiation(self) -> tokio_postgres::config::SslMode {
        match self {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            _ => tokio_postgres::config::SslMode::Require,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// The TLS connector for `mode`, or `None` for `disable`. `root`: the `sslrootcert` path.
pub(super) fn connector(
    mode: SslMode,
    root: Option<&str>,
    shown: &str,
) -> Result<Option<MakeRustlsConnect>, StoreError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Configuration(format!("TLS for {shown}: {e}")))?;
    let roots = match root {
        Some(path) => Some(Arc::new(read_roots(path, shown)?)),
        None => None,
    };
    let verifier: Arc<dyn ServerCertVerifier> = match (mode, roots) {
        (SslMode::Disable, _) => return Ok(None),
        (SslMode::Prefer, _) | (SslMode::Require, None) => Arc::new(Unchecked(provider)),
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(StoreError::Configuration(format!(
                "store URL {shown}: sslmode={} needs the CA certificate to check the server's against; add sslrootcert=<path of a PEM file>",
                mode.name()
            )))
        }
        (SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull, Some(roots)) => {
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| {
                    StoreError::Configuration(format!("store URL {shown}: sslrootcert: {e}"))
                })?;
            if mode == SslMode::VerifyFull {
                webpki
            } else {
                Arc::new(ChainOnly(webpki))
            }
        }
    };
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Some(MakeRustlsConnect::new(config)))
}

fn read_roots(path: &str, shown: &str) -> Result<RootCertStore, StoreError> {
    let unreadable = |why: String| {
        StoreError::Configuration(format!(
            "store URL {shown}: cannot read sslrootcert={path}: {why}; give the path of a PEM file holding the CA certificate that signed the server's"
        ))
    };
    let mut roots = RootCertStore::empty();
    let certificates =
        CertificateDer::pem_file_iter(path).map_err(|e| unreadable(e.to_string()))?;
    for certificate in certificates {
        let certificate = certificate.map_err(|e| unreadable(e.to_string()))?;
        roots
            .add(certificate)
            .map_err(|e| unreadable(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(unreadable("no certificate in it".into()));
    }
    Ok(roots)
}

/// Checks nothing of the server's certificate (`prefer`, and `require` without a root), but
/// still the handshake's signatures, so the session is encrypted to whoever holds that
/// certificate's key.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a root of `sslrootcert`; the host name is not checked.
/// (webpki checks the chain before the name, so a name mismatch means the chain was good.)
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
