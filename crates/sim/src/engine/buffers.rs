//! Access to the buffer rings of a (channel, VL) and to the crossbar's request bits.

use super::Sim;

impl Sim<'_> {
    /// Length of buffer `b` ([`IN`](super::state::IN) or [`OUT`](super::state::OUT)) of (channel, VL) `k`.
    #[inline]
    pub(super) fn q_len(&self, b: usize, k: usize) -> usize {
        self.vs[k].q[b].len()
    }
    #[inline]
    pub(super) fn q_front(&self, b: usize, k: usize) -> Option<u32> {
        self.bufs[b].front(self.vs[k].q[b])
    }
    #[inline]
    pub(super) fn q_push(&mut self, b: usize, k: usize, p: u32) {
        self.bufs[b].push(k, &mut self.vs[k].q[b], p)
    }
    #[inline]
    pub(super) fn q_pop(&mut self, b: usize, k: usize) -> Option<u32> {
        self.bufs[b].pop(k, &mut self.vs[k].q[b])
    }
    pub(super) fn q_drain(&mut self, b: usize, k: usize) -> Vec<u32> {
        self.bufs[b].drain(k, &mut self.vs[k].q[b])
    }
    pub(super) fn q_iter(&self, b: usize, k: usize) -> impl Iterator<Item = u32> + '_ {
        self.bufs[b].iter(k, self.vs[k].q[b])
    }

    /// Word `wi` of output `o`'s request bits.
    #[inline]
    pub(super) fn req_word(&self, o: usize, wi: usize) -> u64 {
        if self.rw == 1 {
            self.cs[o].req
        } else {
            self.req[o * self.rw + wi]
        }
    }

    #[inline]
    pub(super) fn req_mut(&mut self, o: usize, wi: usize) -> &mut u64 {
        if self.rw == 1 {
            &mut self.cs[o].req
        } else {
            &mut self.req[o * self.rw + wi]
        }
    }

    /// Clears the request of input buffer (`c`, `vl`) at output `o`.
    #[inline]
    pub(super) fn clear_req(&mut self, c: u32, vl: u8, o: u32) {
        let port = self.cs[c as usize].dst_port as usize;
        let bit = port * self.nvl + vl as usize;
        *self.req_mut(o as usize, bit / 64) &= !(1u64 << (bit % 64));
    }
}
