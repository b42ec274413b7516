//! `objstore-results serve`: the page and its views beside the collector, on one address.

pub mod collector;
mod editing;
mod error;
mod limiter;
pub mod page;
pub mod tokens;
pub mod webhook;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::header::{CONTENT_SECURITY_POLICY, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS};
use axum::http::HeaderValue;
use axum::Router;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::error::{AppError, Kind};
use crate::store::Writer;
use crate::views::Viewer;
use tokens::Config;

/// Serves until the process is interrupted; `ready` hears the address bound. When the
/// configured address is taken and `any_port` is set, an address the system picks is used.
pub async fn serve(
    config: Config,
    writer: Writer,
    viewer: Arc<Viewer>,
    any_port: bool,
    ready: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let listener = match tokio::net::TcpListener::bind(config.listen).await {
        Err(e) if any_port && e.kind() == std::io::ErrorKind::AddrInUse => {
            tokio::net::TcpListener::bind(SocketAddr::new(config.listen.ip(), 0)).await?
        }
        other => other?,
    };
    ready(listener.local_addr()?);
    viewer.follow(writer.stored_count());
    if let Some(every) = config.triage_every {
        tokio::spawn(weigh_triage(viewer.clone(), every, config.webhook.clone(), config.auto_apply));
    }
    if let Some(every) = config.checkpoint_every {
        tokio::spawn(write_checkpoints(viewer.clone(), every));
    }
    let app = router(config, writer, viewer);
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}

/// Weighs the triage lifecycle every `every` (the first time after one `every`), and posts
/// its events to `webhook`. A failure is said on stderr and tried again next time.
async fn weigh_triage(viewer: Arc<Viewer>, every: std::time::Duration, webhook: Option<String>, auto_apply: bool) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let (viewer, webhook) = (viewer.clone(), webhook.clone());
        let weighed = tokio::task::spawn_blocking(move || {
            let events = viewer.evaluate_lifecycle(auto_apply)?;
            if let Some(url) = webhook {
                for (id, why) in webhook::deliver(&url, &events) {
                    eprintln!("objstore-results: the webhook did not take {id}: {why}");
                }
            }
            Ok::<_, AppError>(())
        })
        .await;
        match weighed {
            Ok(Err(e)) => eprintln!("objstore-results: weighing the triage lifecycle: {e}"),
            Err(e) => eprintln!("objstore-results: weighing the triage lifecycle failed: {e}"),
            Ok(Ok(())) => {}
        }
    }
}

/// Writes a checkpoint of the runs every `every` (the first time after one `every`). A failure
/// is said on stderr and tried again next time.
async fn write_checkpoints(viewer: Arc<Viewer>, every: std::time::Duration) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let viewer = viewer.clone();
        match tokio::task::spawn_blocking(move || viewer.checkpoint()).await {
            Ok(Err(e)) => eprintln!("objstore-results: writing a checkpoint: {e}"),
            Err(e) => eprintln!("objstore-results: writing a checkpoint failed: {e}"),
            Ok(Ok(_)) => {}
        }
    }
}

pub fn router(config: Config, writer: Writer, viewer: Arc<Viewer>) -> Router {
    let header = |name, value| SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value));
    let tokens: Arc<[tokens::Token]> = config.tokens.clone().into();
    let webhook: Option<Arc<str>> = config.webhook.as_deref().map(Arc::from);
    let editors: Arc<[tokens::Token]> = config.editors.clone().into();
    collector::router(config, writer)
        .merge(page::router(viewer, tokens, editors, webhook))
        .fallback(|| async { AppError::not_found("no such address: the page is at /, runs are posted to /results") })
        // A POST to the page (a collector URL without /results) is answered as JSON too.
        .method_not_allowed_fallback(|| async {
            AppError::new(Kind::MethodNotAllowed, "the page and its /api answer GET; runs are posted to /results")
        })
        .layer(header(X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .layer(header(CONTENT_SECURITY_POLICY, page::CONTENT_SECURITY_POLICY))
        .layer(header(REFERRER_POLICY, "no-referrer"))
        .layer(header(X_FRAME_OPTIONS, "DENY"))
}
