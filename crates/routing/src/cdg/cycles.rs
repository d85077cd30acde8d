//! Cycle search on a graph in CSR form: strongly connected components (iterative Tarjan),
//! the cyclic ones, and a shortest witness cycle through a vertex.

use rustc_hash::FxHashMap;

/// Strongly connected components of a CSR graph: `comp[v]` and the component count.
/// Components are numbered in the order Tarjan's algorithm completes them (reverse
/// topological order of the condensation). Iterative: no recursion.
pub fn scc(n: usize, offsets: &[usize], targets: &[u32]) -> (Vec<u32>, usize) {
    const UNV: u32 = u32::MAX;
    let mut index = vec![UNV; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut comp = vec![UNV; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut call: Vec<(u32, usize)> = Vec::new();
    let mut next = 0u32;
    let mut count = 0usize;
    for root in 0..n {
        if index[root] != UNV {
            continue;
        }
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root as u32);
        on_stack[root] = true;
        call.push((root as u32, offsets[root]));
        while let Some(top) = call.last_mut() {
            let v = top.0 as usize;
            if top.1 < offsets[v + 1] {
                let w = targets[top.1] as usize;
                top.1 += 1;
                if index[w] == UNV {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w as u32);
                    on_stack[w] = true;
                    call.push((w as u32, offsets[w]));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            call.pop();
            if let Some(parent) = call.last() {
                let p = parent.0 as usize;
                low[p] = low[p].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(x) = stack.pop() {
                    on_stack[x as usize] = false;
                    comp[x as usize] = count as u32;
                    if x as usize == v {
                        break;
                    }
                }
                count += 1;
            }
        }
    }
    (comp, count)
}

/// The vertex sets of all SCCs that contain a cycle (size > 1, or a self-loop), each sorted,
/// ordered by their smallest vertex.
pub fn cyclic_sccs(n: usize, offsets: &[usize], targets: &[u32]) -> Vec<Vec<u32>> {
    let (comp, count) = scc(n, offsets, targets);
    let mut size = vec![0u32; count];
    for &c in &comp {
        size[c as usize] += 1;
    }
    let mut cyclic = vec![false; count];
    for v in 0..n {
        let c = comp[v] as usize;
        if size[c] > 1 || targets[offsets[v]..offsets[v + 1]].contains(&(v as u32)) {
            cyclic[c] = true;
        }
    }
    let mut slot = vec![u32::MAX; count];
    let mut out: Vec<Vec<u32>> = Vec::new();
    for (v, &c) in comp.iter().enumerate() {
        let c = c as usize;
        if !cyclic[c] {
            continue;
        }
        if slot[c] == u32::MAX {
            slot[c] = out.len() as u32;
            out.push(Vec::new());
        }
        out[slot[c] as usize].push(v as u32);
    }
    out
}

/// A shortest cycle through `root` inside the vertex set `members` (sorted): BFS from `root`
/// back to itself. Returns the vertices in order, starting with `root`.
pub fn witness_cycle(offsets: &[usize], targets: &[u32], members: &[u32], root: u32) -> Vec<u32> {
    let inside = |v: u32| members.binary_search(&v).is_ok();
    let mut parent: FxHashMap<u32, u32> = FxHashMap::default();
    let mut queue = std::collections::VecDeque::new();
    queue.push_back(root);
    while let Some(x) = queue.pop_front() {
        for &w in &targets[offsets[x as usize]..offsets[x as usize + 1]] {
            if w == root {
                let mut path = vec![x];
                let mut cur = x;
                while cur != root {
                    cur = parent.get(&cur).copied().unwrap_or(root);
                    path.push(cur);
                }
                path.pop();
                path.push(root);
                path.reverse();
                // path = root, ..., x ; the edge x -> root closes the cycle.
                return path;
            }
            if inside(w) && !parent.contains_key(&w) {
                parent.insert(w, x);
                queue.push_back(w);
            }
        }
    }
    vec![root]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(n: usize, edges: &[(u32, u32)]) -> (Vec<usize>, Vec<u32>) {
        let mut off = vec![0usize; n + 1];
        for &(a, _) in edges {
            off[a as usize + 1] += 1;
        }
        for i in 0..n {
            off[i + 1] += off[i];
        }
        let mut fill = off.clone();
        let mut t = vec![0u32; edges.len()];
        for &(a, b) in edges {
            t[fill[a as usize]] = b;
            fill[a as usize] += 1;
        }
        (off, t)
    }

    #[test]
    fn sccs_and_witnesses_on_a_small_graph() {
        // 0 -> 1 -> 2 -> 0 is a cycle, 3 -> 4 is not, 5 has a self-loop.
        let (off, t) = csr(6, &[(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (5, 5)]);
        let sccs = cyclic_sccs(6, &off, &t);
        assert_eq!(sccs, vec![vec![0, 1, 2], vec![5]]);
        assert_eq!(witness_cycle(&off, &t, &sccs[0], 0), vec![0, 1, 2]);
        assert_eq!(witness_cycle(&off, &t, &sccs[1], 5), vec![5]);
        let (comp, count) = scc(6, &off, &t);
        assert_eq!(count, 4);
        assert_eq!(comp[0], comp[2]);
        assert_ne!(comp[3], comp[4]);
    }
}
