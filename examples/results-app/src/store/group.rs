//! Group commit: writes that arrive together share one wave. The first writer to find no wave
//! running leads one: it takes every write queued so far (its own among them), runs them with
//! one call, hands each writer its own answer, and steps down; a writer that queued meanwhile
//! leads the next wave. A writer waits only for the wave its write is in.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::error::{AppError, AppResult};

/// Waves of `T`s, each run by `run`, which answers every item of a wave in its order.
pub struct Group<T> {
    state: Mutex<State<T>>,
    turn: Condvar,
}

struct State<T> {
    queue: Vec<(u64, T)>,
    answers: HashMap<u64, AppResult<()>>,
    next: u64,
    leading: bool,
}

impl<T> Default for Group<T> {
    fn default() -> Self {
        let state = State { queue: Vec::new(), answers: HashMap::new(), next: 0, leading: false };
        Group { state: Mutex::new(state), turn: Condvar::new() }
    }
}

impl<T> Group<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `item` and returns its answer once the wave it went out in has run.
    pub fn submit(&self, item: T, run: impl Fn(Vec<T>) -> Vec<AppResult<()>>) -> AppResult<()> {
        let mut state = self.lock();
        let id = state.next;
        state.next += 1;
        state.queue.push((id, item));
        loop {
            if let Some(answer) = state.answers.remove(&id) {
                return answer;
            }
            if state.leading {
                state = self.turn.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            state.leading = true;
            let (ids, wave): (Vec<u64>, Vec<T>) = std::mem::take(&mut state.queue).into_iter().unzip();
            drop(state);
            let n = ids.len();
            let answers = catch_unwind(AssertUnwindSafe(|| run(wave)))
                .ok()
                .filter(|answers| answers.len() == n)
                .unwrap_or_else(|| vec![Err(AppError::internal("a group of writes failed unexpectedly")); n]);
            state = self.lock();
            state.leading = false;
            state.answers.extend(ids.into_iter().zip(answers));
            self.turn.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn every_writer_gets_its_own_answer_and_writes_arriving_together_share_a_wave() {
        let group = Arc::new(Group::<u32>::default());
        let waves = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..32u32)
            .map(|i| {
                let (group, waves) = (group.clone(), waves.clone());
                std::thread::spawn(move || {
                    let run = |items: Vec<u32>| {
                        waves.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        items
                            .iter()
                            .map(|n| if n % 2 == 0 { Ok(()) } else { Err(AppError::refused(n.to_string())) })
                            .collect()
                    };
                    (i, group.submit(i, run))
                })
            })
            .collect();
        for thread in threads {
            let (i, answer) = thread.join().unwrap();
            match i % 2 {
                0 => assert!(answer.is_ok(), "{i}"),
                _ => assert_eq!(answer.unwrap_err().message, i.to_string()),
            }
        }
        assert!(waves.load(Ordering::SeqCst) < 32, "writes arriving together shared a wave");
    }

    #[test]
    fn a_wave_that_panics_answers_each_of_its_writers_with_an_error() {
        let group = Group::<u32>::default();
        let answer = group.submit(1, |_| panic!("boom"));
        assert!(answer.unwrap_err().message.contains("failed unexpectedly"));
        assert!(group.submit(2, |items| items.iter().map(|_| Ok(())).collect()).is_ok(), "the group goes on");
    }
}
