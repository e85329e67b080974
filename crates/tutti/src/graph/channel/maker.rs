//! Making a channel's ends: the builder keeps each channel's token type
//! erased behind a [`Maker`], which makes the ends of a channel within a
//! location, or the producer's and consumer's ends (and the router's inlet)
//! of a channel between locations.

use std::sync::Arc;

use super::remote::TypedInlet;
use super::{Activity, Cell, Chan, CreditTo, ErasedIn, ErasedOut, InEnd, Inlet, OutEnd, RemoteOut};
use crate::graph::onesided::Target;
use crate::graph::port::Token;
use crate::world::LocationId;

/// Makes the ends of a channel carrying `T` (kept type-erased by the builder).
pub(crate) trait Maker: Send + Sync {
    fn local(
        &self,
        capacity: usize,
        producer: Arc<Cell>,
        consumer: Arc<Cell>,
    ) -> (Box<dyn ErasedOut>, Box<dyn ErasedIn>);
    fn remote_out(
        &self,
        out: Arc<RemoteOut>,
        to: LocationId,
        channel: u32,
        same_rank: bool,
        target: Option<Target>,
    ) -> Box<dyn ErasedOut>;
    fn remote_in(
        &self,
        capacity: usize,
        consumer: Arc<Cell>,
        activity: Arc<Activity>,
        from: LocationId,
        channel: u32,
        same_rank: bool,
    ) -> (Box<dyn ErasedIn>, Box<dyn Inlet>);
}

pub(crate) struct TypedMaker<T>(std::marker::PhantomData<fn(T) -> T>);

impl<T> TypedMaker<T> {
    pub(crate) fn new() -> Self {
        TypedMaker(std::marker::PhantomData)
    }
}

impl<T: Token> Maker for TypedMaker<T> {
    fn local(
        &self,
        capacity: usize,
        producer: Arc<Cell>,
        consumer: Arc<Cell>,
    ) -> (Box<dyn ErasedOut>, Box<dyn ErasedIn>) {
        let chan = Arc::new(Chan::<T>::new(capacity, Some(producer), consumer));
        (
            Box::new(OutEnd::Local(Arc::clone(&chan))),
            Box::new(InEnd { chan, credit: None }),
        )
    }

    fn remote_out(
        &self,
        out: Arc<RemoteOut>,
        to: LocationId,
        channel: u32,
        same_rank: bool,
        target: Option<Target>,
    ) -> Box<dyn ErasedOut> {
        Box::new(OutEnd::<T>::Remote {
            out,
            to,
            channel,
            same_rank,
            scratch: Vec::new(),
            target,
        })
    }

    fn remote_in(
        &self,
        capacity: usize,
        consumer: Arc<Cell>,
        activity: Arc<Activity>,
        from: LocationId,
        channel: u32,
        same_rank: bool,
    ) -> (Box<dyn ErasedIn>, Box<dyn Inlet>) {
        let chan = Arc::new(Chan::<T>::new(capacity, None, consumer));
        (
            Box::new(InEnd {
                chan: Arc::clone(&chan),
                credit: Some(CreditTo {
                    to: from,
                    channel,
                    same_rank,
                }),
            }),
            Box::new(TypedInlet::new(chan, activity)),
        )
    }
}
