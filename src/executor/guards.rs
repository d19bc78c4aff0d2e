//! The dropped-call guards: a claim or a settlement still on its way when its caller
//! goes away is seen to its end (SPEC v1.1 rule 5).

use super::*;

/// What a claim needs, owned, so that it can go on after its caller left.
pub(super) struct ClaimTicket {
    pub(super) store: Arc<dyn Store>,
    pub(super) events: Arc<Events>,
    pub(super) tool: Tool,
    pub(super) tenant: Option<Arc<str>>,
    pub(super) key: Key,
    pub(super) token: Token,
    pub(super) lease_ms: u64,
    pub(super) ttl_ms: u64,
    pub(super) retry_failure: bool,
    pub(super) payload_checked: bool,
    pub(super) fingerprint: Option<Arc<str>>,
    /// When the lease ends at the latest, if the clock was read before claiming.
    pub(super) lease_until: Option<Instant>,
    /// The caller's deadline: what the claim is bounded by.
    pub(super) deadline: Option<Instant>,
}

impl ClaimTicket {
    /// The settler that releases this claim (its body never ran): `what` is
    /// [`Settlement::ReleaseUnrun`] for a claim that landed, [`Settlement::ReleaseLost`] for one
    /// whose reply was lost.
    pub(super) fn release_unrun(self, what: Settlement) -> Settler {
        let lease_until = self
            .lease_until
            .unwrap_or_else(|| Instant::now() + self.tool.policy().lease);
        Settler {
            store: self.store,
            events: self.events,
            tool: self.tool.name().to_owned(),
            tenant: self.tenant,
            key: self.key,
            token: self.token,
            lease_until,
            what,
            bounded: true,
        }
    }
}

pub(super) type Claiming =
    Pin<Box<dyn Future<Output = (Result<ClaimReply, StoreError>, ClaimTicket)> + Send>>;

/// A claim on its way to the store. Awaited to the end it answers the store's reply. Dropped
/// before that — the caller's deadline came, or the caller's own future was dropped (SPEC v1.1
/// rules 3 and 5) — the claim may still land, so it is seen to the end in a task of its own and
/// released if it landed (or if the store failed and it may have): its body never ran.
pub(super) struct ClaimInFlight(pub(super) Option<Claiming>);

impl Future for ClaimInFlight {
    type Output = Result<ClaimReply, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(claiming) = self.0.as_mut() else {
            return Poll::Ready(Err(StoreError::unavailable(
                "a claim was awaited again after it answered",
            )));
        };
        match claiming.as_mut().poll(cx) {
            Poll::Ready((reply, _)) => {
                self.0 = None;
                Poll::Ready(reply)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for ClaimInFlight {
    fn drop(&mut self) {
        let Some(claiming) = self.0.take() else {
            return;
        };
        spawn_settling(async move {
            let (reply, ticket) = claiming.await;
            match reply {
                Ok(ClaimReply {
                    claim: Claim::Acquired { .. },
                    ..
                }) => {
                    ticket
                        .release_unrun(Settlement::ReleaseUnrun)
                        .background(0)
                        .await
                }
                // The store failed: the claim may have landed, or may land yet.
                Err(_) => {
                    ticket
                        .release_unrun(Settlement::ReleaseLost)
                        .background(0)
                        .await
                }
                Ok(_) => {}
            }
        });
    }
}

/// Settling under way. Dropped before it finished (the caller's future was dropped after its
/// body ran), it goes on in a task of its own: the body's outcome is still recorded, or its
/// claim released, as if the caller had stayed (SPEC v1.1 rule 3: a body that finished in
/// this process has its outcome recorded).
pub(super) struct SettlingInFlight(
    pub(super) Option<Pin<Box<dyn Future<Output = Recording> + Send>>>,
);

impl Future for SettlingInFlight {
    type Output = Recording;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Recording> {
        let Some(settling) = self.0.as_mut() else {
            return Poll::Ready(Recording::Failed("settling was awaited again".into()));
        };
        match settling.as_mut().poll(cx) {
            Poll::Ready(recording) => {
                self.0 = None;
                Poll::Ready(recording)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for SettlingInFlight {
    fn drop(&mut self) {
        if let Some(settling) = self.0.take() {
            spawn_settling(async move {
                settling.await;
            });
        }
    }
}
