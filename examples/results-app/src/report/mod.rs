//! The typed views as text for people: the terminal's table, CI's summary and the
//! self-contained HTML export.

pub mod export;
pub mod render;
pub mod summary;
pub mod table;
