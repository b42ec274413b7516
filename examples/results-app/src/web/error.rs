//! The app's error as an HTTP answer: its kind's status, and `{"error", "field"?}` as JSON.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::error::{AppError, Kind};

impl AppError {
    /// The HTTP status that answers this error.
    pub fn status(&self) -> StatusCode {
        match self.kind {
            Kind::BadInput => StatusCode::BAD_REQUEST,
            Kind::Unauthorized => StatusCode::UNAUTHORIZED,
            Kind::Forbidden => StatusCode::FORBIDDEN,
            Kind::NotFound => StatusCode::NOT_FOUND,
            Kind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Kind::Timeout => StatusCode::REQUEST_TIMEOUT,
            Kind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Kind::Unsupported => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Kind::TooMany => StatusCode::TOO_MANY_REQUESTS,
            Kind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Kind::Refused => StatusCode::BAD_GATEWAY,
            Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// Answered as JSON: `{"error": message, "field"?: name}`.
impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut body = json!({"error": self.message});
        if let Some(field) = self.field {
            body["field"] = json!(field);
        }
        (status, Json(body)).into_response()
    }
}
