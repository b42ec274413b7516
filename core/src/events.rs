//! Change and lifecycle events. Change events are collected while a transaction runs and
//! delivered only after it commits, in the order the changes were made; rolled-back work
//! produces none.

use serde_json::Value;

use crate::key::Key;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A record was written under a key that had none.
    Created,
    /// A record replaced an existing one.
    Updated,
    /// A record was removed; with no key, the whole store was cleared.
    Deleted,
    /// The database is open. A listener that subscribes to an open database gets it at once.
    Ready,
    /// A request failed; the message says why. Its work was rolled back.
    Error,
    /// Objects came from the bucket into a synced store; the message says how many.
    Fetched,
    /// The bucket refused a write because it holds another version (HTTP 412): the value is
    /// what was not sent; the local data is kept as a refused write until it is resolved.
    Conflict,
    /// The bucket could not be reached; writes wait in the outbox.
    Offline,
    /// Writes waiting in the outbox reached the bucket; the message says how many.
    Flushed,
}

impl EventKind {
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Created => "created",
            EventKind::Updated => "updated",
            EventKind::Deleted => "deleted",
            EventKind::Ready => "ready",
            EventKind::Error => "error",
            EventKind::Fetched => "fetched",
            EventKind::Conflict => "conflict",
            EventKind::Offline => "offline",
            EventKind::Flushed => "flushed",
        }
    }

    pub const ALL: [EventKind; 9] = [
        EventKind::Created,
        EventKind::Updated,
        EventKind::Deleted,
        EventKind::Ready,
        EventKind::Error,
        EventKind::Fetched,
        EventKind::Conflict,
        EventKind::Offline,
        EventKind::Flushed,
    ];

    pub fn from_name(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: EventKind,
    pub store: Option<String>,
    pub key: Option<Key>,
    pub value: Option<Value>,
    pub message: Option<String>,
}

impl Event {
    pub(crate) fn change(kind: EventKind, store: &str, key: Option<Key>, value: Option<Value>) -> Event {
        Event { kind, store: Some(store.to_string()), key, value, message: None }
    }

    pub(crate) fn sync(kind: EventKind, store: &str, key: Option<Key>, value: Option<Value>, message: String) -> Event {
        Event { kind, store: Some(store.to_string()), key, value, message: Some(message) }
    }

    pub(crate) fn lifecycle(kind: EventKind, message: Option<String>) -> Event {
        Event { kind, store: None, key: None, value: None, message }
    }
}

/// Which events a listener wants: some kinds (all when empty), optionally of one store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventFilter {
    pub kinds: Vec<EventKind>,
    pub store: Option<String>,
}

impl EventFilter {
    pub fn all() -> EventFilter {
        EventFilter::default()
    }

    pub fn kinds(kinds: &[EventKind]) -> EventFilter {
        EventFilter { kinds: kinds.to_vec(), store: None }
    }

    pub fn store(mut self, store: &str) -> EventFilter {
        self.store = Some(store.to_string());
        self
    }

    pub fn wants(&self, kind: EventKind, store: Option<&str>) -> bool {
        (self.kinds.is_empty() || self.kinds.contains(&kind))
            && match (&self.store, store) {
                (Some(wanted), Some(s)) => wanted == s,
                (Some(_), None) => !matches!(kind, EventKind::Created | EventKind::Updated | EventKind::Deleted),
                (None, _) => true,
            }
    }
}

pub type Listener = Box<dyn FnMut(&Event) + Send>;
pub type SubscriptionId = u64;

#[derive(Default)]
pub(crate) struct Listeners {
    next_id: SubscriptionId,
    entries: Vec<(SubscriptionId, EventFilter, Listener)>,
}

impl Listeners {
    pub fn add(&mut self, filter: EventFilter, listener: Listener) -> SubscriptionId {
        self.next_id += 1;
        self.entries.push((self.next_id, filter, listener));
        self.next_id
    }

    pub fn remove(&mut self, id: SubscriptionId) -> bool {
        let before = self.entries.len();
        self.entries.retain(|(i, _, _)| *i != id);
        self.entries.len() != before
    }

    pub fn wants(&self, kind: EventKind, store: Option<&str>) -> bool {
        self.entries.iter().any(|(_, f, _)| f.wants(kind, store))
    }

    /// Calls every interested listener. A listener that panics is dropped, so one bad listener
    /// cannot stop the others or the database.
    pub fn dispatch(&mut self, event: &Event) {
        self.dispatch_among(None, event);
    }

    /// Calls one listener (by id) with an event, as `dispatch` would.
    pub fn dispatch_to(&mut self, id: SubscriptionId, event: &Event) {
        self.dispatch_among(Some(id), event);
    }

    fn dispatch_among(&mut self, only: Option<SubscriptionId>, event: &Event) {
        self.entries.retain_mut(|(id, filter, listener)| {
            if only.is_some_and(|o| o != *id) || !filter.wants(event.kind, event.store.as_deref()) {
                return true;
            }
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| listener(event))).is_ok()
        });
    }
}
