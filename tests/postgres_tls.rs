//! PostgreSQL over TLS (libpq's `sslmode` and `sslrootcert`), against a private PostgreSQL with
//! `ssl=on` and a certificate for 127.0.0.1 signed by a test CA made at test time (openssl), and
//! against the shared server, which has no TLS. The server itself says whether a session is
//! encrypted (`pg_stat_ssl`).

use std::path::{Path, PathBuf};
use std::process::Command;

use idemkit::store::StoreOptions;
use idemkit::testing::random_key;
use idemkit::{ErrorKind, Token};

mod common;

fn postgres_url() -> Option<String> {
    common::env_url("IDEMKIT_POSTGRES_URL")
}

/// A private PostgreSQL with TLS on, the CA that signed its certificate (`ca.pem` in `certs`),
/// and another CA that did not (`other/ca.pem`).
struct TlsPostgres {
    server: common::PrivatePostgres,
    certs: PathBuf,
}

impl TlsPostgres {
    /// `None` (a loud skip) without initdb or openssl.
    fn start() -> Option<TlsPostgres> {
        let certs =
            std::env::temp_dir().join(format!("idemkit-pg-tls-{}", &Token::random().hex()[..10]));
        std::fs::create_dir_all(certs.join("other")).unwrap();
        if !common::make_certificates(&certs) || !common::make_certificates(&certs.join("other")) {
            common::skip("openssl", "cannot make test certificates (needs openssl)");
            return None;
        }
        let mut server = common::PrivatePostgres::init()?;
        // The server reads its certificate and key from its data directory, as its own user.
        for (from, to) in [("cert.pem", "server.crt"), ("key.pem", "server.key")] {
            let target = server.dir.join(to);
            std::fs::copy(certs.join(from), &target).unwrap();
            let target = target.to_string_lossy().into_owned();
            let owner = Command::new("stat")
                .args(["-c", "%U", &server.dir.to_string_lossy()])
                .output()
                .unwrap();
            let owner = String::from_utf8_lossy(&owner.stdout).trim().to_owned();
            assert!(Command::new("chown")
                .args([&owner, &target])
                .status()
                .unwrap()
                .success());
            assert!(Command::new("chmod")
                .args(["600", &target])
                .status()
                .unwrap()
                .success());
        }
        server.settings =
            "-c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key".to_owned();
        if !server.pg_ctl("start") {
            common::skip(
                "pg_ctl",
                &format!(
                    "cannot start a private PostgreSQL with TLS: {}",
                    server.log_tail()
                ),
            );
            return None;
        }
        Some(TlsPostgres { server, certs })
    }

    fn ca(&self) -> String {
        self.certs.join("ca.pem").to_string_lossy().into_owned()
    }

    fn other_ca(&self) -> String {
        self.certs
            .join("other/ca.pem")
            .to_string_lossy()
            .into_owned()
    }

    /// The server's URL with `query`, under a fresh application name (returned too).
    fn url(&self, host: &str, query: &str) -> (String, String) {
        let application = format!("idemkit_tls_{}", &Token::random().hex()[..8]);
        let mut url = format!(
            "postgres://postgres@{host}:{}/postgres?application_name={application}",
            self.server.port
        );
        if !query.is_empty() {
            url = format!("{url}&{query}");
        }
        (url, application)
    }

    /// Opens a store on `url`, runs a claim through it, and answers whether every session the
    /// server has for `application` is encrypted.
    async fn open_and_claim(&self, url: &str, application: &str) -> bool {
        let store = idemkit::store::open(url, &StoreOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let postgres = idemkit::store::postgres::PostgresStore::connect(
            &format!(
                "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
                self.server.port
            ),
            &StoreOptions::default(),
        )
        .await
        .unwrap();
        postgres.create_table_if_missing().await.unwrap();
        let key = random_key();
        store
            .claim(&common::untenanted_request(&key, "tls_test"))
            .await
            .unwrap();
        encrypted(self.server.port, application).await
    }
}

impl Drop for TlsPostgres {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.certs);
    }
}

/// Whether the server's sessions for `application` are all encrypted (and there is one).
async fn encrypted(port: u16, application: &str) -> bool {
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT count(*), coalesce(bool_and(s.ssl), false) FROM pg_stat_activity a \
             JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = $1",
            &[&application],
        )
        .await
        .unwrap();
    let (sessions, all_ssl): (i64, bool) = (row.get(0), row.get(1));
    assert!(sessions > 0, "no session of {application}");
    all_ssl
}

async fn refused(url: &str) -> idemkit::Error {
    match idemkit::store::open(url, &StoreOptions::default()).await {
        Ok(_) => panic!("{url} opened"),
        Err(e) => e,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sslmode_against_a_server_with_tls() {
    if postgres_url().is_none() {
        return;
    }
    let Some(server) = TlsPostgres::start() else {
        return;
    };
    let ca = server.ca();
    // Encrypted, the certificate not checked.
    // (No sslmode at all is prefer, as in libpq.)
    for query in ["sslmode=require", "sslmode=prefer", ""] {
        let (url, application) = server.url("127.0.0.1", query);
        assert!(server.open_and_claim(&url, &application).await, "{url}");
    }
    // Checked against the right CA: the chain (verify-ca, and require with a root), and the
    // chain and the host (verify-full).
    for mode in ["verify-full", "verify-ca", "require"] {
        let (url, application) =
            server.url("127.0.0.1", &format!("sslmode={mode}&sslrootcert={ca}"));
        assert!(server.open_and_claim(&url, &application).await, "{url}");
    }
    // Plain text when asked.
    let (url, application) = server.url("127.0.0.1", "sslmode=disable");
    assert!(!server.open_and_claim(&url, &application).await, "{url}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_that_does_not_check_out_is_refused() {
    if postgres_url().is_none() {
        return;
    }
    let Some(server) = TlsPostgres::start() else {
        return;
    };
    let (ca, other) = (server.ca(), server.other_ca());
    // Signed by another CA: refused by every mode that checks.
    for mode in ["verify-full", "verify-ca", "require"] {
        let (url, _) = server.url("127.0.0.1", &format!("sslmode={mode}&sslrootcert={other}"));
        let error = refused(&url).await;
        assert_eq!(error.kind(), ErrorKind::Configuration, "{url}: {error}");
        let text = error.to_string();
        assert!(
            text.contains("certificate") && text.contains("sslrootcert"),
            "{url}: {text}"
        );
    }
    // The certificate is made out to 127.0.0.1, not to `localhost`: verify-full refuses that
    // name, verify-ca (the chain only) accepts it.
    let (url, _) = server.url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let error = refused(&url).await;
    assert_eq!(error.kind(), ErrorKind::Configuration, "{url}: {error}");
    let (url, application) =
        server.url("localhost", &format!("sslmode=verify-ca&sslrootcert={ca}"));
    assert!(server.open_and_claim(&url, &application).await, "{url}");
}

#[tokio::test]
async fn tls_settings_that_cannot_work_are_refused_before_connecting() {
    // Port 1 is never dialled: each is refused first.
    let base = "postgres://app:hunter2@127.0.0.1:1/db";
    for (query, names) in [
        ("sslmode=verify-full", "sslrootcert="),
        ("sslmode=verify-ca", "sslrootcert="),
        ("sslmode=sometimes", "sslmode=sometimes"),
        ("sslmode=allow", "sslmode=prefer"),
        (
            "sslmode=verify-full&sslrootcert=/nonexistent/idemkit-ca.pem",
            "/nonexistent/idemkit-ca.pem",
        ),
    ] {
        let url = format!("{base}?{query}");
        let error = refused(&url).await;
        assert_eq!(error.kind(), ErrorKind::Configuration, "{url}: {error}");
        let text = error.to_string();
        assert!(text.contains(names), "{url}: {text}");
        assert!(!text.contains("hunter2"), "{url}: {text}");
    }
    // A file without a certificate in it.
    let empty =
        std::env::temp_dir().join(format!("idemkit-empty-{}.pem", &Token::random().hex()[..8]));
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let url = format!("{base}?sslmode=verify-ca&sslrootcert={}", empty.display());
    let error = refused(&url).await;
    assert_eq!(error.kind(), ErrorKind::Configuration, "{error}");
    assert!(error.to_string().contains("no certificate"), "{error}");
    let _ = std::fs::remove_file(Path::new(&empty));
}

/// The shared server has no TLS: `require` is refused saying so; `prefer` connects in plain
/// text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_tls_is_refused_under_require() {
    let Some(url) = postgres_url() else { return };
    let sep = if url.contains('?') { '&' } else { '?' };
    let required = format!("{url}{sep}sslmode=require");
    let error = refused(&required).await;
    assert_eq!(error.kind(), ErrorKind::Configuration, "{error}");
    assert!(error.to_string().contains("does not offer TLS"), "{error}");
    idemkit::store::open(
        &format!("{url}{sep}sslmode=prefer"),
        &StoreOptions::default(),
    )
    .await
    .unwrap();
}
