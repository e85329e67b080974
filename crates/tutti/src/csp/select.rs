//! `select!` and `select_blocking!`: a one-off [`Alt`](super::Alt) written as a `match`,
//! whose value is the fired guard's branch.

/// Waits for the first of several channel operations, timeouts or a default, and
/// evaluates the branch of the one that fired (Go's `select`, occam's `ALT`). Use it in
/// async code; [`select_blocking!`](crate::select_blocking) is the form for plain
/// threads.
///
/// ```text
/// tutti::select! {
///     recv(rx) -> msg => …,             // msg: Result<T, RecvError>
///     send(tx, value) -> res => …,      // res: Result<(), SendError<T>>
///     future(fut) -> out => …,          // out: fut's output (any `Future`)
///     recv(other) -> msg if ready => …, // a pre-condition: a false one disables the guard
///     timeout(duration) => …,           // or deadline(instant) => …
///     default => …,                     // fires if no other guard is ready, wherever written
/// }
/// ```
///
/// Exactly one guard fires, with the guarantees of [`Alt`](super::Alt): a `recv` branch
/// runs with a value that was received, a `send` branch after its value was sent (or
/// with the value back in the error, if the channel ended); guards that did not fire
/// consumed nothing. Among ready guards each is about equally likely to fire, also
/// when the `select!` runs again and again in a loop (each evaluation starts its search
/// at a pseudo-random guard, like Go's `select`); `select! { pri; … }` prefers the
/// first ready guard in order (`PRI ALT`). `default` fires only when no other enabled
/// guard is ready, wherever it is written, and makes the `select!` a poll that never
/// waits.
///
/// **Cancellation.** A `select!` future dropped before it completes (an enclosing
/// timeout, an outer `select!`) has consumed nothing and sent nothing: a value a sender
/// had committed to a `recv` arm goes back to the front of its channel; a `send` arm
/// hands its value over only in the poll that completes the `select!` (a receiver that
/// comes while it waits wakes it, and it sends when polled — a two-phase offer), so a
/// dropped `select!` has not sent and a retry delivers the value exactly once. The price:
/// a `try_recv` on a rendezvous channel cannot take a value a `select!` offers (it finds
/// nothing and wakes the `select!`; a receiver that waits gets the value). A `future`
/// arm that does not fire has not completed; the future is dropped with the `select!`
/// (pass `&mut fut` to keep it). [`select_blocking!`](crate::select_blocking) cannot be
/// cancelled, and its send arms hand over in one step.
///
/// The guard expressions are evaluated once, in
/// order, before waiting; the `->` bindings are irrefutable patterns. The channels are no
/// longer borrowed when a branch runs.
///
/// ```
/// use std::time::Duration;
/// use tutti::csp::{buffered, channel};
///
/// let (jobs_tx, jobs) = channel::<u32>();
/// let (results, results_rx) = buffered::<u32>(1);
/// let answer = tutti::block_on(async {
///     tutti::select! {
///         recv(jobs) -> job => job.unwrap(),
///         send(results, 42) -> sent => { sent.unwrap(); 1 },
///         timeout(Duration::from_secs(10)) => 2,
///     }
/// });
/// assert_eq!(answer, 1); // nobody sends a job, and there is room for the result
/// assert_eq!(results_rx.try_recv(), Ok(42));
/// # drop(jobs_tx);
/// ```
#[macro_export]
macro_rules! select {
    (pri; $($arms:tt)*) => {
        $crate::__select_parse!((pri_select().await) [] $($arms)*)
    };
    ($($arms:tt)*) => {
        $crate::__select_parse!((select().await) [] $($arms)*)
    };
}

/// The blocking form of [`select!`](crate::select), for plain threads (and for workers
/// outside async tasks, which keep running other work while they wait).
///
/// ```
/// use tutti::csp::{channel, RecvError};
///
/// let (tx, rx) = channel::<&str>();
/// let (_idle_tx, idle) = channel::<&str>();
/// std::thread::spawn(move || tx.send_blocking("hi").unwrap());
/// let got = tutti::select_blocking! {
///     recv(idle) -> _msg => unreachable!(),
///     recv(rx) -> msg => msg,
/// };
/// assert_eq!(got, Ok("hi"));
/// // A `default` branch makes it a poll that never waits.
/// let polled: Result<&str, RecvError> = tutti::select_blocking! {
///     recv(idle) -> msg => msg,
///     default => Err(RecvError::Closed),
/// };
/// assert!(polled.is_err());
/// ```
#[macro_export]
macro_rules! select_blocking {
    (pri; $($arms:tt)*) => {
        $crate::__select_parse!((pri_select_blocking()) [] $($arms)*)
    };
    ($($arms:tt)*) => {
        $crate::__select_parse!((select_blocking()) [] $($arms)*)
    };
}

/// Parses the arms of `select!` into `[kind (guard args) (pattern) (condition) (body)]`.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_parse {
    // All arms parsed.
    ($how:tt [$($arms:tt)*]) => {
        $crate::__select_bind!($how (0usize) [$($arms)*] [])
    };
    ($how:tt [$($arms:tt)*] recv($rx:expr) -> $pat:pat $(if $cond:expr)? => $($rest:tt)*) => {
        $crate::__select_body!($how [$($arms)*] [recv ($rx) ($pat) ($(($cond))? (true))] $($rest)*)
    };
    ($how:tt [$($arms:tt)*] send($tx:expr, $value:expr) -> $pat:pat $(if $cond:expr)? => $($rest:tt)*) => {
        $crate::__select_body!($how [$($arms)*] [send ($tx, $value) ($pat) ($(($cond))? (true))] $($rest)*)
    };
    ($how:tt [$($arms:tt)*] future($f:expr) -> $pat:pat $(if $cond:expr)? => $($rest:tt)*) => {
        $crate::__select_body!($how [$($arms)*] [future ($f) ($pat) ($(($cond))? (true))] $($rest)*)
    };
    ($how:tt [$($arms:tt)*] timeout($d:expr) $(if $cond:expr)? => $($rest:tt)*) => {
        $crate::__select_body!($how [$($arms)*] [timeout ($d) (()) ($(($cond))? (true))] $($rest)*)
    };
    ($how:tt [$($arms:tt)*] deadline($at:expr) $(if $cond:expr)? => $($rest:tt)*) => {
        $crate::__select_body!($how [$($arms)*] [deadline ($at) (()) ($(($cond))? (true))] $($rest)*)
    };
    ($how:tt [$($arms:tt)*] default => $($rest:tt)*) => {
        $crate::__select_body!($how [$($arms)*] [default () (()) ((true))] $($rest)*)
    };
    ($how:tt [$($arms:tt)*] $($bad:tt)+) => {
        ::core::compile_error!(
            "tutti::select!: expected `recv(rx) -> pat => …`, `send(tx, value) -> pat => …`, \
             `future(fut) -> pat => …`, `timeout(d) => …`, `deadline(at) => …` or \
             `default => …` (each optionally with \
             `if condition` before `=>`), separated by commas"
        )
    };
}

/// Takes an arm's body (a block, optionally followed by a comma; or an expression,
/// followed by a comma unless it is the last arm) and goes on parsing.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_body {
    ($how:tt [$($arms:tt)*] [$($head:tt)*] $body:block , $($rest:tt)*) => {
        $crate::__select_parse!($how [$($arms)* [$($head)* ($body)]] $($rest)*)
    };
    ($how:tt [$($arms:tt)*] [$($head:tt)*] $body:block $($rest:tt)*) => {
        $crate::__select_parse!($how [$($arms)* [$($head)* ($body)]] $($rest)*)
    };
    ($how:tt [$($arms:tt)*] [$($head:tt)*] $body:expr , $($rest:tt)*) => {
        $crate::__select_parse!($how [$($arms)* [$($head)* ($body)]] $($rest)*)
    };
    ($how:tt [$($arms:tt)*] [$($head:tt)*] $body:expr) => {
        $crate::__select_parse!($how [$($arms)* [$($head)* ($body)]])
    };
}

/// Evaluates each guard's expressions once, in order, binding them to names that are
/// unique per arm (each recursion step's `__g`/`__v`/`__o` is a distinct identifier by
/// hygiene), then hands over to `__select_run`.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_bind {
    ($how:tt $idx:tt [] [$($bound:tt)*]) => {
        $crate::__select_run!($how [$($bound)*])
    };
    ($how:tt $idx:tt [[recv ($rx:expr) $pat:tt (($cond:expr) $($_default:tt)*) $body:tt] $($rest:tt)*] [$($bound:tt)*]) => {{
        let __g = &$rx;
        let mut __o = ::core::option::Option::None;
        $crate::__select_bind!($how ($idx + 1) [$($rest)*] [$($bound)* [recv $idx __g () __o $pat ($cond) $body]])
    }};
    ($how:tt $idx:tt [[send ($tx:expr, $value:expr) $pat:tt (($cond:expr) $($_default:tt)*) $body:tt] $($rest:tt)*] [$($bound:tt)*]) => {{
        let __g = &$tx;
        let __v = $value;
        let mut __o = ::core::option::Option::None;
        $crate::__select_bind!($how ($idx + 1) [$($rest)*] [$($bound)* [send $idx __g (__v) __o $pat ($cond) $body]])
    }};
    ($how:tt $idx:tt [[$kind:ident ($($arg:expr)?) $pat:tt (($cond:expr) $($_default:tt)*) $body:tt] $($rest:tt)*] [$($bound:tt)*]) => {{
        let __g = ($($arg)?);
        let mut __o = ::core::option::Option::None;
        $crate::__select_bind!($how ($idx + 1) [$($rest)*] [$($bound)* [$kind $idx __g () __o $pat ($cond) $body]])
    }};
}

/// Builds the `Alt`, selects, takes the fired guard's outcome, drops the `Alt` (so the
/// channels are free again) and runs the branch.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_run {
    (($($how:tt)*) [$([$kind:ident $idx:tt $g:ident ($($v:ident)?) $o:ident $pat:tt ($cond:expr) $body:tt])*]) => {{
        let mut __alt = $crate::csp::Alt::new();
        // Each guard's binding becomes what its branch takes the outcome with.
        $(
            #[allow(clippy::let_unit_value, unused_variables)]
            let $g = $crate::__select_add!(__alt, $kind, $g, ($($v)?));
            __alt = __alt.when($cond);
        )*
        {
            let __sel = __alt.$($how)*;
            let __i = __sel.index();
            $( if __i == $idx { $crate::__select_take!(__sel, $kind, $g, $o) } else )* {
                ::core::unreachable!("tutti::select!: guard {} fired, which it does not have", __i)
            }
        }
        ::core::mem::drop(__alt);
        $( if let ::core::option::Option::Some(__out) = $o {
            let $pat = __out;
            $body
        } else )* {
            ::core::unreachable!("tutti::select!: no guard fired")
        }
    }};
}

/// Adds one guard to the `Alt` being built; its value is what the branch takes the
/// outcome with (the channel end, or a future guard's handle).
#[doc(hidden)]
#[macro_export]
macro_rules! __select_add {
    ($alt:ident, recv, $g:ident, ()) => {{
        $alt = $alt.recv($g);
        $g
    }};
    ($alt:ident, send, $g:ident, ($v:ident)) => {{
        $alt = $alt.send($g, $v);
        $g
    }};
    ($alt:ident, future, $g:ident, ()) => {
        $alt.future($g)
    };
    ($alt:ident, timeout, $g:ident, ()) => {
        $alt = $alt.timeout($g)
    };
    ($alt:ident, deadline, $g:ident, ()) => {
        $alt = $alt.deadline($g)
    };
    ($alt:ident, default, $g:ident, ()) => {{
        let () = $g;
        $alt = $alt.fallback()
    }};
}

/// Takes the fired guard's outcome into its arm's slot.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_take {
    ($sel:ident, recv, $g:ident, $o:ident) => {
        $o = ::core::option::Option::Some($sel.recv($g))
    };
    ($sel:ident, send, $g:ident, $o:ident) => {
        $o = ::core::option::Option::Some($sel.sent($g))
    };
    ($sel:ident, future, $g:ident, $o:ident) => {
        $o = ::core::option::Option::Some($sel.output(&$g))
    };
    ($sel:ident, $kind:ident, $g:ident, $o:ident) => {{
        ::core::mem::drop($sel);
        $o = ::core::option::Option::Some(())
    }};
}
