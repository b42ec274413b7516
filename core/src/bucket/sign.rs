//! AWS Signature Version 4 for S3 requests, by the `aws-sigv4` crate (the AWS SDK's own signer)
//! rather than hand-written canonicalisation and HMACs.

use std::time::SystemTime;

use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use aws_sigv4::sign::v4;

use super::connection::Credentials;
use crate::error::{Error, Result};

/// The headers that sign `method url` with `headers` and `body` (x-amz-date,
/// x-amz-content-sha256, authorization, and x-amz-security-token with a session token).
pub fn signature_headers(
    credentials: &Credentials,
    region: &str,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Vec<(String, String)>> {
    let mut settings = SigningSettings::default();
    // S3 wants the path encoded once and left as sent, and the payload hash as a header.
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    let identity = aws_credential_types::Credentials::new(
        &credentials.access_key_id,
        &credentials.secret_access_key,
        credentials.session_token.clone(),
        None,
        "objstore-db",
    )
    .into();
    let failed = |e: &dyn std::fmt::Display| Error::Internal(format!("cannot sign {method} {url}: {e}"));
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("s3")
        .time(SystemTime::now())
        .settings(settings)
        .build()
        .map_err(|e| failed(&e))?
        .into();
    let request = SignableRequest::new(
        method,
        url,
        headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        SignableBody::Bytes(body),
    )
    .map_err(|e| failed(&e))?;
    let (instructions, _signature) = sign(request, &params).map_err(|e| failed(&e))?.into_parts();
    Ok(instructions.headers().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}
