//! Iterating over a receiver: [`Rx::iter`], [`Rx::try_iter`] and `for v in rx`.

use std::fmt;

use super::rx::Rx;

impl<T> Rx<T> {
    /// A blocking iterator over the values received: each `next` waits for a value, and
    /// the iteration ends when the channel is closed (and drained) or poisoned.
    ///
    /// # Panics
    /// `next` panics when called inside an async task (use `recv().await` in a loop).
    ///
    /// ```
    /// let (tx, rx) = tutti::csp::buffered::<u32>(3);
    /// std::thread::spawn(move || {
    ///     for i in 1..=3 {
    ///         tx.send_blocking(i).unwrap();
    ///     }
    /// }); // dropping `tx` closes the channel: the iteration ends
    /// assert_eq!(rx.iter().sum::<u32>(), 6);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// An iterator over the values that can be received without waiting; it ends at the
    /// first that would wait (or when the channel ended).
    ///
    /// ```
    /// let (tx, rx) = tutti::csp::buffered::<u32>(4);
    /// tx.try_send(1).unwrap();
    /// tx.try_send(2).unwrap();
    /// assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 2]);
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }
}

/// The blocking iterator of [`Rx::iter`].
pub struct Iter<'a, T> {
    rx: &'a Rx<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.recv_blocking().ok()
    }
}

/// The non-blocking iterator of [`Rx::try_iter`].
pub struct TryIter<'a, T> {
    rx: &'a Rx<T>,
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

/// The owning blocking iterator of `for v in rx`.
pub struct IntoIter<T> {
    rx: Rx<T>,
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.recv_blocking().ok()
    }
}

impl<'a, T> IntoIterator for &'a Rx<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;

    /// ```
    /// let (tx, rx) = tutti::csp::buffered::<u8>(2);
    /// tx.try_send(1).unwrap();
    /// drop(tx);
    /// for v in &rx {
    ///     assert_eq!(v, 1);
    /// }
    /// ```
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T> IntoIterator for Rx<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    /// ```
    /// let (tx, rx) = tutti::csp::buffered::<u8>(2);
    /// tx.try_send(5).unwrap();
    /// drop(tx);
    /// assert_eq!(rx.into_iter().collect::<Vec<_>>(), [5]);
    /// ```
    fn into_iter(self) -> IntoIter<T> {
        IntoIter { rx: self }
    }
}

impl<T> fmt::Debug for Iter<'_, T> {
    /// ```
    /// let (_tx, rx) = tutti::csp::channel::<u8>();
    /// assert!(format!("{:?}", rx.iter()).starts_with("Iter"));
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for TryIter<'_, T> {
    /// ```
    /// let (_tx, rx) = tutti::csp::channel::<u8>();
    /// assert!(format!("{:?}", rx.try_iter()).starts_with("TryIter"));
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TryIter").finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for IntoIter<T> {
    /// ```
    /// let (_tx, rx) = tutti::csp::channel::<u8>();
    /// assert!(format!("{:?}", rx.into_iter()).starts_with("IntoIter"));
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntoIter").finish_non_exhaustive()
    }
}
