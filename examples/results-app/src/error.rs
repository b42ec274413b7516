//! The app's one error: what a command prints, what a view answers and what the collector
//! refuses a post with. Its kind says whose fault it was (and so, in `web/error.rs`, which HTTP
//! status answers it); its field names the input at fault, when one is. It knows no web and no
//! library: `store/` turns the library's errors into it.

/// Whose fault, and so the HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The input was wrong: a parameter, a label, a report that does not parse (400).
    BadInput,
    /// No bearer token, or not one this collector accepts (401).
    Unauthorized,
    /// Allowed to no one asking this way: another site's page, a pair outside a token (403).
    Forbidden,
    /// What was asked for is not there (404).
    NotFound,
    /// Asked with a method the path does not take (405).
    MethodNotAllowed,
    /// The request did not arrive in time (408).
    Timeout,
    /// The body is over the limit (413).
    TooLarge,
    /// The body is of a type the app does not read (415).
    Unsupported,
    /// This address asked too often (429).
    TooMany,
    /// Something in this process failed: a file, the cache, a thread (500).
    Internal,
    /// The bucket or the library refused or failed (502).
    Refused,
    /// The bucket could not be reached, or failed for now (503).
    Unavailable,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppError {
    pub kind: Kind,
    pub message: String,
    /// The input at fault (a form's field, a parameter), when one is.
    pub field: Option<String>,
}

pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    pub fn new(kind: Kind, message: impl Into<String>) -> AppError {
        AppError { kind, message: message.into(), field: None }
    }

    pub fn bad(message: impl Into<String>) -> AppError {
        AppError::new(Kind::BadInput, message)
    }

    pub fn not_found(message: impl Into<String>) -> AppError {
        AppError::new(Kind::NotFound, message)
    }

    pub fn internal(message: impl Into<String>) -> AppError {
        AppError::new(Kind::Internal, message)
    }

    pub fn refused(message: impl Into<String>) -> AppError {
        AppError::new(Kind::Refused, message)
    }

    pub fn unavailable(message: impl Into<String>) -> AppError {
        AppError::new(Kind::Unavailable, message)
    }

    /// The same error, naming `field` as the input at fault (unless it names one already).
    pub fn at(mut self, field: &str) -> AppError {
        self.field.get_or_insert_with(|| field.to_string());
        self
    }

    /// The same error with `context` before its message (`reading x.xml: ...`).
    pub fn context(mut self, context: impl std::fmt::Display) -> AppError {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AppError {}
