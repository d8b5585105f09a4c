//! The phone listener's TLS: a key made for this install on first use and
//! kept owner-only beside the database, a self-signed certificate for the
//! address the person picked (made again only when the address changes, so
//! a phone that trusted it once is not asked again), and its SHA-256
//! fingerprint, which the page shows beside the QR code so the person can
//! compare it with what the phone's browser shows.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};

use crate::private_fs::{self, Mode};
use crate::{Error, Result};

/// The largest key or certificate file read back (they are ~250 bytes and ~500).
const MAX_PEM_BYTES: u64 = 16 * 1024;

/// A certificate ready to serve, and what the person compares.
pub struct Identity {
    pub config: Arc<rustls::ServerConfig>,
    /// `AB:CD:…`, 32 bytes.
    pub fingerprint: String,
}

/// The key and certificate for `address`, in `dir` (made on first use).
pub fn identity(dir: &Path, address: IpAddr) -> Result<Identity> {
    private_fs::private_dir(dir).map_err(io(dir, "cannot create"))?;
    let key = key(dir)?;
    let cert = certificate(dir, address, &key)?;
    let fingerprint = fingerprint(&cert);
    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(vec![cert], key_der))
        .map_err(|e| Error::internal("setting up the phone listener's TLS", e.to_string()))?;
    Ok(Identity {
        config: Arc::new(config),
        fingerprint,
    })
}

/// `AB:CD:…`: the SHA-256 of the certificate as browsers show it.
pub fn fingerprint(cert: &CertificateDer<'_>) -> String {
    Sha256::digest(cert.as_ref())
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn key(dir: &Path) -> Result<rcgen::KeyPair> {
    let path = dir.join("key.pem");
    if let Ok(bytes) = private_fs::read_ours(&path, MAX_PEM_BYTES) {
        match std::str::from_utf8(&bytes).ok().map(rcgen::KeyPair::from_pem) {
            Some(Ok(key)) => return Ok(key),
            _ => tracing::warn!(path = %path.display(), "the phone listener's key cannot be read; making a new one"),
        }
    }
    let key =
        rcgen::KeyPair::generate().map_err(|e| Error::internal("making the phone listener's key", e.to_string()))?;
    private_fs::replace(&path, key.serialize_pem().as_bytes(), Mode::Private).map_err(io(&path, "cannot write"))?;
    Ok(key)
}

/// The certificate for `address`: the one kept for it (one file per address,
/// so moving back to an address a phone trusted asks nothing again), else a new one.
fn certificate(dir: &Path, address: IpAddr, key: &rcgen::KeyPair) -> Result<CertificateDer<'static>> {
    // `cert-192.0.2.7.der`, `cert-fd00__2.der`: one plain file name whatever the address.
    let path = dir.join(format!("cert-{}.der", address.to_string().replace(':', "_")));
    if let Ok(der) = private_fs::read_ours(&path, MAX_PEM_BYTES) {
        return Ok(CertificateDer::from(der));
    }
    let mut params = rcgen::CertificateParams::new(vec![address.to_string()])
        .map_err(|e| Error::internal("describing the phone listener's certificate", e.to_string()))?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("local-mcp on {address}"));
    // A phone keeps trusting it for years; the person re-pairs when they like.
    params.not_after = rcgen::date_time_ymd(2046, 1, 1);
    let cert = params
        .self_signed(key)
        .map_err(|e| Error::internal("making the phone listener's certificate", e.to_string()))?;
    let der = cert.der().clone();
    private_fs::replace(&path, der.as_ref(), Mode::Private).map_err(io(&path, "cannot write"))?;
    Ok(der)
}

fn io<'a>(path: &'a Path, what: &'static str) -> impl Fn(std::io::Error) -> Error + 'a {
    move |e| Error::internal(format!("{what} {}", path.display()), e)
}

/// This install's path secret (made on first use, kept owner-only): 32 hex digits.
pub fn path_secret(dir: &Path) -> Result<String> {
    let path = dir.join("path");
    if let Ok(bytes) = private_fs::read_ours(&path, 64) {
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let text = text.trim();
            if text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Ok(text.to_ascii_lowercase());
            }
        }
    }
    private_fs::private_dir(dir).map_err(io(dir, "cannot create"))?;
    let secret = uuid::Uuid::new_v4().simple().to_string();
    private_fs::replace(&path, secret.as_bytes(), Mode::Private).map_err(io(&path, "cannot write"))?;
    Ok(secret)
}

/// Where the key and certificates live: `<database>-phone/`.
pub fn dir_beside(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push("-phone");
    db.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_kept_and_the_certificate_follows_the_address() {
        let dir = tempfile::tempdir().unwrap();
        let a: IpAddr = "192.0.2.7".parse().unwrap();
        let first = identity(dir.path(), a).unwrap();
        let again = identity(dir.path(), a).unwrap();
        assert_eq!(
            first.fingerprint, again.fingerprint,
            "the same certificate for the same address"
        );
        assert_eq!(first.fingerprint.len(), 32 * 3 - 1);
        let b: IpAddr = "198.51.100.9".parse().unwrap();
        let moved = identity(dir.path(), b).unwrap();
        assert_ne!(
            moved.fingerprint, first.fingerprint,
            "a new certificate for a new address"
        );
        let back = identity(dir.path(), a).unwrap();
        assert_eq!(
            back.fingerprint, first.fingerprint,
            "back on the first address: its certificate again"
        );
        let key = std::fs::read_to_string(dir.path().join("key.pem")).unwrap();
        assert!(key.contains("PRIVATE KEY"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("key.pem"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "the key is the owner's only");
        }
    }
}
