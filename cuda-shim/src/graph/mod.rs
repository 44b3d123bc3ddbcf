//! CUDA graphs: built node by node (`cuGraphAdd*Node`) or captured from streams (`capture`),
//! instantiated, and launched on a stream.
//!
//! - A node holds the work it does as a job that may run many times (each launch of each
//!   instantiation runs it once); a kernel node's arguments are copied when the node is made, as
//!   CUDA copies them.
//! - Instantiation snapshots the graph in a dependency order (later changes to the graph do not
//!   change the executable graph); a cycle is refused. A launch queues one work item on the stream
//!   that runs the nodes: every node runs after the nodes it depends on, and independent branches
//!   run at once (on up to 8 threads; a chain runs on the stream's worker alone). Two
//!   launches of one executable graph never overlap. Event record nodes are recorded when the launch
//!   is queued and complete when they run. An executable graph takes new kernel parameters
//!   (`cuGraphExecKernelNodeSetParams`) or all the work of a graph of the same shape
//!   (`cuGraphExecUpdate`) for its later launches.
//! - Graph memory (`memory`): allocation and free nodes, made directly or captured from
//!   `cuMemAllocAsync`/`cuMemFreeAsync`.
//! - Conditional nodes (`conditional`): `if`/`else`, `while` and `switch` over body graphs.
//! - Not supported: external semaphores, the other node setters of executable graphs: those calls
//!   return `CUDA_ERROR_NOT_SUPPORTED`.

mod capture;
mod conditional;
pub(crate) mod memory;

pub use capture::*;
pub(crate) use conditional::conditional_exports;

use crate::errors::*;
use crate::state::*;
use crate::stream::{resolve, Queue};
use crate::{init_check, out, Handle};
use parking_lot::Mutex;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// A node's work: run once per launch, on the launching stream's worker.
pub type NodeJob = Arc<dyn Fn() -> Result<(), CUresult> + Send + Sync>;

/// `CUgraphNodeType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum NodeType {
    Kernel = 0,
    Memcpy = 1,
    Memset = 2,
    Host = 3,
    Graph = 4,
    Empty = 5,
    WaitEvent = 6,
    EventRecord = 7,
    /// Graph allocations (`memory`).
    MemAlloc = 10,
    MemFree = 11,
    /// Stream memory operations, captured (`crate::memop`).
    BatchMemOp = 12,
    Conditional = 13,
}

impl NodeType {
    pub fn name(self) -> &'static str {
        match self {
            NodeType::Kernel => "kernel",
            NodeType::Memcpy => "memcpy",
            NodeType::Memset => "memset",
            NodeType::Host => "host",
            NodeType::Graph => "graph",
            NodeType::Empty => "empty",
            NodeType::WaitEvent => "wait event",
            NodeType::EventRecord => "event record",
            NodeType::MemAlloc => "mem alloc",
            NodeType::MemFree => "mem free",
            NodeType::BatchMemOp => "batch mem op",
            NodeType::Conditional => "conditional",
        }
    }
}

/// A batch-memory-operation node's context and operations (`CUstreamBatchMemOpParams` as words).
type MemOps = (usize, Arc<Vec<[u64; 6]>>);

pub struct Node {
    pub graph: usize,
    pub kind: NodeType,
    /// What the node does (`None`: an empty node).
    job: Mutex<Option<NodeJob>>,
    /// Kernel nodes: their parameters, for `cuGraphKernelNodeGetParams`.
    kernel: Mutex<Option<KernelParams>>,
    /// Event record and wait nodes: the event.
    event: Mutex<Option<Arc<crate::event::Event>>>,
    /// Batch-memory-operation nodes made by `cuGraphAddBatchMemOpNode`: their context and operations,
    /// for `cuGraphBatchMemOpNodeGetParams` (whose array points here).
    memops: Mutex<Option<MemOps>>,
    /// Allocation and free nodes: the graph allocation.
    pub alloc: Mutex<Option<Arc<crate::graph::memory::GraphAlloc>>>,
    /// Conditional nodes: the handle, kind and bodies, whose work is planned at instantiation.
    cond: Mutex<Option<conditional::Cond>>,
    /// Child graph nodes: the node's own copy of the child, planned at instantiation.
    child: Mutex<Option<usize>>,
}

impl Node {
    fn new(graph: usize, kind: NodeType, job: Option<NodeJob>) -> Node {
        Node {
            graph,
            kind,
            job: Mutex::new(job),
            kernel: Mutex::new(None),
            event: Mutex::new(None),
            memops: Mutex::new(None),
            alloc: Mutex::new(None),
            cond: Mutex::new(None),
            child: Mutex::new(None),
        }
    }

    /// A copy of this node for graph `graph`, with a copy of the child graph it holds. Graph
    /// allocation, free and conditional nodes are not copied (`clone_graph` refuses them).
    fn copy_into(&self, graph: usize) -> Result<Node, CUresult> {
        let child = match *self.child.lock() {
            Some(c) => Some(clone_graph(c)?),
            None => None,
        };
        Ok(Node {
            graph,
            kind: self.kind,
            job: Mutex::new(self.job.lock().clone()),
            kernel: Mutex::new(self.kernel.lock().clone()),
            event: Mutex::new(self.event.lock().clone()),
            memops: Mutex::new(self.memops.lock().clone()),
            alloc: Mutex::new(None),
            cond: Mutex::new(None),
            child: Mutex::new(child),
        })
    }

    /// The graphs the node holds (a child graph's copy, a conditional node's bodies), which go with it.
    fn graphs(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.child.lock().iter().copied().collect();
        if let Some(c) = self.cond.lock().as_ref() {
            v.extend_from_slice(c.bodies());
        }
        v
    }
}

/// A copy of graph `g` (`cuGraphClone`, and what a child graph node holds): its nodes with their work
/// and parameters, its edges, copies of its child graphs, and its user objects' references. As
/// cuda.h says, a graph with allocation, free or conditional nodes cannot be copied.
fn clone_graph(g: usize) -> Result<usize, CUresult> {
    let src = GRAPHS.get(g)?;
    let nodes = src.nodes.lock().clone();
    for (h, _) in &nodes {
        if matches!(
            NODES.get(*h)?.kind,
            NodeType::MemAlloc | NodeType::MemFree | NodeType::Conditional
        ) {
            return Err(CUDA_ERROR_NOT_SUPPORTED);
        }
    }
    let mut copies = std::collections::HashMap::new();
    for (h, _) in &nodes {
        match NODES.get(*h).and_then(|n| n.copy_into(0)) {
            Ok(n) => copies.insert(*h, n),
            Err(e) => {
                copies.values().for_each(|n| drop_graphs(&n.graphs()));
                return Err(e);
            }
        };
    }
    let copy = GRAPHS.insert(Graph {
        nodes: Mutex::new(vec![]),
        user_objects: src.user_objects.duplicate(),
        handles: Mutex::new(vec![]),
    });
    let new_of: std::collections::HashMap<usize, usize> = copies
        .into_iter()
        .map(|(h, mut n)| {
            n.graph = copy;
            (h, NODES.insert(n))
        })
        .collect();
    *GRAPHS.get(copy)?.nodes.lock() = nodes
        .iter()
        .map(|(h, deps)| (new_of[h], deps.iter().map(|d| new_of[d]).collect()))
        .collect();
    Ok(copy)
}

/// Drops the graphs of a node that went (its child's copy, its conditional bodies).
fn drop_graphs(graphs: &[usize]) {
    for &g in graphs {
        let _ = drop_graph(g);
    }
}

/// A kernel node's launch, with its argument buffer.
#[derive(Clone)]
pub struct KernelParams {
    pub func: usize,
    pub grid: [c_uint; 3],
    pub block: [c_uint; 3],
    pub shared: c_uint,
    pub args: Arc<Vec<u8>>,
    /// Where each parameter lies in `args`: the `kernelParams` array the node gives back.
    pub arg_ptrs: Arc<Vec<usize>>,
}

#[derive(Default)]
pub struct Graph {
    /// Nodes in the order they were added, with the nodes each depends on.
    nodes: Mutex<Vec<(usize, Vec<usize>)>>,
    /// The user objects it holds references to (`cuGraphRetainUserObject`).
    pub user_objects: crate::user_object::Held,
    /// Its conditional handles (`cuGraphConditionalHandleCreate`).
    handles: Mutex<Vec<Arc<conditional::CondHandle>>>,
}

/// One node of a plan: the node it stands for, its job (`None`: nothing to do), the steps it waits
/// for (by position, all earlier), and whether it is a memory-operation node (which may wait on a flag
/// another branch sets, so it starts after the others that are ready).
#[derive(Clone)]
struct Step {
    key: usize,
    job: Option<NodeJob>,
    deps: Vec<usize>,
    last: bool,
}

/// A graph's nodes in a dependency order.
type Steps = Vec<Step>;

/// Branches of a graph that run at once, at most.
const MAX_BRANCHES: usize = 8;

/// What a launch of an executable graph runs: its steps, and its event nodes, whose records and
/// waits are fixed when the launch is queued.
#[derive(Clone)]
struct Plan {
    steps: Steps,
    /// References to the graph's user objects, held as long as a launch or an executable graph runs
    /// this plan (an update swaps them with the plan).
    _user_objects: Arc<crate::user_object::Held>,
    /// Event record nodes and wait nodes, by node (of the graph instantiated from).
    records: Vec<(usize, Arc<crate::event::Event>)>,
    waits: Vec<(usize, Arc<crate::event::Event>)>,
    /// The graph's conditional handles, which take their default values as each run starts.
    handles: Vec<Arc<conditional::CondHandle>>,
}

pub struct Exec {
    /// The nodes of the graph it was instantiated from, in the order added then (they name its
    /// steps, and updates pair with them by position).
    nodes: Vec<usize>,
    /// The shape of that graph when instantiated, which `cuGraphExecUpdate` compares against.
    shape: Vec<(NodeType, Vec<usize>)>,
    /// A launch runs the plan as it is when the launch is queued: updates swap in a new one.
    plan: Mutex<Arc<Plan>>,
    /// Held while a launch runs: two launches of one executable graph (on two streams) never run
    /// at the same time.
    running: Mutex<()>,
    /// The graph it was made from, when that has allocation or free nodes: such a graph has one
    /// instantiation at a time (cuda.h), as its allocations have one address each.
    memory_graph: Option<usize>,
}

/// Graphs with allocation or free nodes that have an instantiation.
static INSTANTIATED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

impl Drop for Exec {
    fn drop(&mut self) {
        if let Some(g) = self.memory_graph {
            INSTANTIATED.lock().retain(|&x| x != g);
        }
    }
}

pub static GRAPHS: once_cell::sync::Lazy<Table<Graph>> = once_cell::sync::Lazy::new(|| Table::new(Tag::Graph));
pub static NODES: once_cell::sync::Lazy<Table<Node>> = once_cell::sync::Lazy::new(|| Table::new(Tag::GraphNode));
pub static EXECS: once_cell::sync::Lazy<Table<Exec>> = once_cell::sync::Lazy::new(|| Table::new(Tag::GraphExec));

impl Graph {
    /// Whether it has graph allocation or free nodes.
    fn has_memory_nodes(&self) -> bool {
        self.nodes.lock().iter().any(|(h, _)| {
            NODES
                .get(*h)
                .is_ok_and(|n| matches!(n.kind, NodeType::MemAlloc | NodeType::MemFree))
        })
    }

    /// Adds a node of `kind` doing `job`, after `deps` (nodes of this graph).
    fn add(&self, graph: usize, kind: NodeType, job: Option<NodeJob>, deps: &[usize]) -> Result<usize, CUresult> {
        for &d in deps {
            if NODES.get(d)?.graph != graph {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
        }
        let h = NODES.insert(Node::new(graph, kind, job));
        let mut unique = deps.to_vec();
        unique.sort_unstable();
        unique.dedup();
        self.nodes.lock().push((h, unique));
        Ok(h)
    }

    /// The nodes in a dependency order (Kahn's algorithm, stable in the order of addition), each as
    /// (node, position of addition, positions in this order of the nodes it depends on), read under
    /// one lock; `None` if the dependencies form a cycle. Memory-operation nodes (which may wait on a
    /// flag another branch sets) come after every other node that is ready.
    fn ordered(&self) -> Option<Vec<(usize, usize, Vec<usize>)>> {
        let nodes = self.nodes.lock();
        let index: std::collections::HashMap<usize, usize> = nodes.iter().enumerate().map(|(i, n)| (n.0, i)).collect();
        let mut waiting: Vec<usize> = nodes.iter().map(|n| n.1.len()).collect();
        let mut after: Vec<Vec<usize>> = vec![vec![]; nodes.len()];
        for (i, (_, deps)) in nodes.iter().enumerate() {
            for d in deps {
                after[index[d]].push(i);
            }
        }
        let last: Vec<bool> = nodes
            .iter()
            .map(|n| NODES.get(n.0).is_ok_and(|n| n.kind == NodeType::BatchMemOp))
            .collect();
        // Ready nodes by (runs last, order of addition).
        let mut ready: std::collections::BTreeSet<(bool, usize)> = (0..nodes.len())
            .filter(|&i| waiting[i] == 0)
            .map(|i| (last[i], i))
            .collect();
        let mut order = Vec::with_capacity(nodes.len());
        while let Some((_, i)) = ready.pop_first() {
            order.push(i);
            for &j in &after[i] {
                waiting[j] -= 1;
                if waiting[j] == 0 {
                    ready.insert((last[j], j));
                }
            }
        }
        if order.len() != nodes.len() {
            return None;
        }
        let mut step_of = vec![0; nodes.len()];
        for (at, &i) in order.iter().enumerate() {
            step_of[i] = at;
        }
        Some(
            order
                .into_iter()
                .map(|i| (nodes[i].0, i, nodes[i].1.iter().map(|d| step_of[index[d]]).collect()))
                .collect(),
        )
    }
}

/// `CUDA_GRAPH_INSTANTIATE_PARAMS` (cuda.h).
#[repr(C)]
pub struct InstantiateParams {
    flags: u64,
    upload_stream: Handle,
    error_node: Handle,
    result: c_int,
}

/// A run of a plan's jobs (a child graph, a conditional body); the first failure stops it.
fn run_plan(plan: &Plan) -> Result<(), CUresult> {
    plan.handles.iter().for_each(|h| h.start());
    run_steps(&plan.steps, &|s: &Step| s.job.as_ref().map_or(Ok(()), |job| job()))
}

/// Runs `work` on every step once the steps it depends on are done: a chain in order on this
/// thread, a graph with branches on up to [`MAX_BRANCHES`] threads, so that independent branches
/// run at once (and a branch waiting on memory that another sets gets there, unless eight steps
/// block at once). After a failure no further step starts; the first failure is the result. Steps
/// already running are not cancelled: a memory-operation wait whose releasing branch failed waits
/// until its context is destroyed.
fn run_steps(steps: &[Step], work: &(dyn Fn(&Step) -> Result<(), CUresult> + Sync)) -> Result<(), CUresult> {
    let n = steps.len();
    let mut after = vec![Vec::new(); n];
    for (i, s) in steps.iter().enumerate() {
        for &d in &s.deps {
            after[d].push(i);
        }
    }
    let roots = steps.iter().filter(|s| s.deps.is_empty()).count();
    if roots <= 1 && after.iter().all(|a| a.len() <= 1) {
        return steps.iter().try_for_each(work);
    }
    struct State {
        ready: std::collections::BTreeSet<(bool, usize)>,
        waiting: Vec<usize>,
        done: usize,
        error: Option<CUresult>,
    }
    let state = Mutex::new(State {
        ready: steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.deps.is_empty())
            .map(|(i, s)| (s.last, i))
            .collect(),
        waiting: steps.iter().map(|s| s.deps.len()).collect(),
        done: 0,
        error: None,
    });
    let wake = parking_lot::Condvar::new();
    std::thread::scope(|scope| {
        for _ in 0..n.min(MAX_BRANCHES) {
            scope.spawn(|| loop {
                let i = {
                    let mut st = state.lock();
                    loop {
                        if st.error.is_some() || st.done == n {
                            return;
                        }
                        if let Some((_, i)) = st.ready.pop_first() {
                            break i;
                        }
                        wake.wait(&mut st);
                    }
                };
                // A step that panics fails the launch (and does not leave the others waiting for it).
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&steps[i])))
                    .unwrap_or(Err(CUDA_ERROR_LAUNCH_FAILED));
                let mut st = state.lock();
                st.done += 1;
                match r {
                    Err(e) => {
                        st.error.get_or_insert(e);
                    }
                    Ok(()) => {
                        for &j in &after[i] {
                            st.waiting[j] -= 1;
                            if st.waiting[j] == 0 {
                                st.ready.insert((steps[j].last, j));
                            }
                        }
                    }
                }
                wake.notify_all();
            });
        }
    });
    state.into_inner().error.map_or(Ok(()), Err)
}

/// Removes graph `g` and its nodes (and the bodies of its conditional nodes).
fn drop_graph(g: usize) -> Result<(), CUresult> {
    let graph = GRAPHS.remove(g)?;
    for (h, _) in graph.nodes.lock().drain(..) {
        if let Ok(node) = NODES.remove(h) {
            drop_graphs(&node.graphs());
        }
    }
    Ok(())
}

// ---- building graphs ----------------------------------------------------------------------------

unsafe fn deps_of<'a>(deps: *const Handle, n: usize) -> Result<&'a [usize], CUresult> {
    crate::c_array(deps as *const usize, n)
}

/// `CUDA_BATCH_MEM_OP_NODE_PARAMS`.
#[repr(C)]
pub struct BatchMemOpParams {
    ctx: Handle,
    count: c_uint,
    ops: *const [u64; 6],
    flags: c_uint,
}

/// A batch-memory-operation node's context (the current one if none is named), its checked
/// operations and its work.
unsafe fn batch_mem_op_node(p: *const BatchMemOpParams) -> Result<(MemOps, NodeJob), CUresult> {
    let p = p.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
    let ctx = if p.ctx.is_null() {
        crate::state::current_ctx()?
    } else {
        p.ctx as usize
    };
    let (words, ops) = crate::memop::batch_ops(p.count, p.ops, p.flags, crate::memop::Api::V2)?;
    let job = crate::memop::batch_job(&*CONTEXTS.get(ctx)?, ops);
    Ok(((ctx, Arc::new(words)), job))
}

pub(crate) unsafe fn add_node(
    pn: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    kind: NodeType,
    job: Option<NodeJob>,
) -> Result<usize, CUresult> {
    init_check()?;
    if pn.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let graph = GRAPHS.get(g as usize)?;
    let h = graph.add(g as usize, kind, job, deps_of(deps, n)?)?;
    *pn = h as Handle;
    Ok(h)
}

/// `CUDA_KERNEL_NODE_PARAMS` (v2): v1's fields, then two more.
#[repr(C)]
pub struct KernelNodeParams {
    v1: KernelNodeParamsV1,
    kern: Handle,
    ctx: Handle,
}

/// `CUDA_KERNEL_NODE_PARAMS_v1`.
#[repr(C)]
pub struct KernelNodeParamsV1 {
    func: Handle,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
}

/// A kernel node's parameters and job from `CUDA_KERNEL_NODE_PARAMS` (`v2`: its `kern` field may
/// name the kernel instead of `func`; a v1 caller's struct is shorter and is read as such).
unsafe fn kernel_node(p: *const KernelNodeParams, v2: bool) -> Result<(KernelParams, NodeJob), CUresult> {
    if p.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    // A v1 caller's struct ends after the v1 fields: nothing past them is read.
    let kern = if v2 { (*p).kern } else { std::ptr::null_mut() };
    let p = &*(p as *const KernelNodeParamsV1);
    let f = if p.func.is_null() && v2 { kern } else { p.func };
    let (args, job) = crate::launch::prepare_launch(
        f,
        p.grid,
        p.block,
        p.shared,
        p.params,
        p.extra,
        None,
        Default::default(),
    )?;
    let arg_ptrs = crate::launch::param_offsets(f)?
        .into_iter()
        .map(|o| args.as_ptr() as usize + o)
        .collect();
    Ok((
        KernelParams {
            func: f as usize,
            grid: p.grid,
            block: p.block,
            shared: p.shared,
            args,
            arg_ptrs: Arc::new(arg_ptrs),
        },
        job,
    ))
}

unsafe fn add_kernel_node(
    pn: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    p: *const KernelNodeParams,
    v2: bool,
) -> Result<(), CUresult> {
    init_check()?;
    let (params, job) = kernel_node(p, v2)?;
    let h = add_node(pn, g, deps, n, NodeType::Kernel, Some(job))?;
    *NODES.get(h)?.kernel.lock() = Some(params);
    Ok(())
}

/// `CUgraphExecUpdateResultInfo`.
#[repr(C)]
pub struct UpdateResultInfo {
    result: c_int,
    error_node: Handle,
    error_from_node: Handle,
}

/// `CUDA_MEMSET_NODE_PARAMS`.
#[repr(C)]
pub struct MemsetNodeParams {
    dst: u64,
    pitch: usize,
    value: c_uint,
    element_size: c_uint,
    width: usize,
    height: usize,
}

/// `CUDA_HOST_NODE_PARAMS`.
#[repr(C)]
pub struct HostNodeParams {
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
}

fn host_job(f: unsafe extern "C" fn(*mut c_void), data: *mut c_void) -> NodeJob {
    let d = data as usize;
    Arc::new(move || {
        // SAFETY: the caller's function and data, as it asked them to be called.
        unsafe { f(d as *mut c_void) };
        Ok(())
    })
}

/// An event wait node's job where it runs as part of a child graph: it waits for the newest record
/// when it runs (a top-level launch fixes the record when it is queued, `graph_launch`).
fn event_wait_job(e: Arc<crate::event::Event>) -> NodeJob {
    Arc::new(move || {
        if let Some(generation) = e.pending() {
            e.wait(generation);
        }
        Ok(())
    })
}

/// An event record node's job where it runs as part of a child graph: a record done at once.
fn event_record_job(e: Arc<crate::event::Event>) -> NodeJob {
    Arc::new(move || {
        e.complete(e.issue());
        Ok(())
    })
}

fn child_job(child: usize) -> Result<NodeJob, CUresult> {
    let g = GRAPHS.get(child)?;
    // The child's user objects live as long as the node's work does (they are part of the plan).
    let plan = plan(&g, None)?;
    Ok(Arc::new(move || run_plan(&plan)))
}

/// What a launch of `g` runs: its nodes in a dependency order with their jobs, and its event nodes.
/// `keys` names each node (by position of addition) as another graph's node, for updates.
fn plan(g: &Graph, keys: Option<&[usize]>) -> Result<Plan, CUresult> {
    let order = g.ordered().ok_or(CUDA_ERROR_INVALID_VALUE)?;
    let mut plan = Plan {
        _user_objects: Arc::new(g.user_objects.duplicate()),
        steps: vec![],
        records: vec![],
        waits: vec![],
        handles: g.handles.lock().clone(),
    };
    for (h, position, deps) in order {
        let node = NODES.get(h)?;
        let key = keys.map_or(h, |k| k[position]);
        let cond = node.cond.lock();
        let child = *node.child.lock();
        let job = match (cond.as_ref(), child) {
            (Some(c), _) => Some(conditional::job(c)?),
            (None, Some(g)) => Some(child_job(g)?),
            (None, None) => node.job.lock().clone(),
        };
        drop(cond);
        plan.steps.push(Step {
            key,
            job,
            deps,
            last: node.kind == NodeType::BatchMemOp,
        });
        let event = node.event.lock().clone();
        if let Some(e) = event {
            match node.kind {
                NodeType::EventRecord => plan.records.push((key, e)),
                _ => plan.waits.push((key, e)),
            }
        }
    }
    Ok(plan)
}

/// `g`'s nodes in the order they were added: each one's type and the positions of those it depends
/// on. Two graphs of one shape pair their nodes by position.
fn shape(g: &Graph) -> Result<Vec<(NodeType, Vec<usize>)>, CUresult> {
    let nodes = g.nodes.lock();
    let position: std::collections::HashMap<usize, usize> = nodes.iter().enumerate().map(|(i, n)| (n.0, i)).collect();
    nodes
        .iter()
        .map(|(h, deps)| {
            let mut d: Vec<usize> = deps.iter().map(|x| position[x]).collect();
            d.sort_unstable();
            Ok((NODES.get(*h)?.kind, d))
        })
        .collect()
}

unsafe fn instantiate(pe: *mut Handle, g: Handle) -> Result<(), CUresult> {
    init_check()?;
    if pe.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let graph = GRAPHS.get(g as usize)?;
    let plan = plan(&graph, None)?;
    let nodes = graph.nodes.lock().iter().map(|(h, _)| *h).collect();
    let shape = shape(&graph)?;
    let memory_graph = graph.has_memory_nodes().then_some(g as usize);
    if let Some(g) = memory_graph {
        let mut live = INSTANTIATED.lock();
        if live.contains(&g) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        live.push(g);
    }
    *pe = EXECS.insert(Exec {
        nodes,
        shape,
        plan: Mutex::new(Arc::new(plan)),
        running: Mutex::new(()),
        memory_graph,
    }) as Handle;
    Ok(())
}

/// `cuGraphExecKernelNodeSetParams`: kernel node `node` (of the graph `e` was made from) runs with
/// new parameters in later launches of `e`; the graph itself keeps its own.
unsafe fn exec_kernel_params(e: Handle, node: Handle, p: *const KernelNodeParams, v2: bool) -> Result<(), CUresult> {
    init_check()?;
    exec_set_job(e, node, NodeType::Kernel, || Ok(kernel_node(p, v2)?.1))
}

/// Gives node `node` of executable graph `e` (a node of `kind`) the work `job` makes, for the
/// launches queued from now on.
fn exec_set_job(
    e: Handle,
    node: Handle,
    kind: NodeType,
    job: impl FnOnce() -> Result<NodeJob, CUresult>,
) -> Result<(), CUresult> {
    let exec = EXECS.get(e as usize)?;
    let n = NODES.get(node as usize)?;
    if !exec.nodes.contains(&(node as usize)) || n.kind != kind {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let job = job()?;
    let mut plan = exec.plan.lock();
    let mut new = (**plan).clone();
    let step = new
        .steps
        .iter_mut()
        .find(|s| s.key == node as usize)
        .ok_or(CUDA_ERROR_INVALID_VALUE)?;
    step.job = Some(job);
    *plan = Arc::new(new);
    Ok(())
}

/// `cuGraphExecUpdate`: `e` takes the work of graph `g`'s nodes, which must pair with the nodes of
/// the graph `e` was made from (same count, types and dependencies, in the order added). The
/// result code, and the node that differs in type, where one does.
unsafe fn exec_update(e: Handle, g: Handle) -> Result<(c_int, usize), CUresult> {
    init_check()?;
    let exec = EXECS.get(e as usize)?;
    let graph = GRAPHS.get(g as usize)?;
    let new_shape = shape(&graph)?;
    if new_shape.len() != exec.shape.len() || new_shape.iter().zip(&exec.shape).any(|(a, b)| a.1 != b.1) {
        return Ok((2, 0)); // CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
    }
    let new_nodes: Vec<usize> = graph.nodes.lock().iter().map(|(h, _)| *h).collect();
    if let Some(i) = (0..new_shape.len()).find(|&i| new_shape[i].0 != exec.shape[i].0) {
        return Ok((3, new_nodes[i])); // CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED
    }
    // Pair by position: the i-th node added to `g` replaces the work of the i-th of the original.
    *exec.plan.lock() = Arc::new(plan(&graph, Some(&exec.nodes))?);
    Ok((0, 0))
}

unsafe fn graph_launch(e: Handle, s: Handle) -> Result<(), CUresult> {
    init_check()?;
    let exec = EXECS.get(e as usize)?;
    let plan = exec.plan.lock().clone();
    // Event nodes are fixed now, as work queued on the stream would be: a wait node waits for the
    // newest record before this launch, and a record node is recorded now and complete when it
    // runs (or when the launch ends or is dropped without reaching it, so nothing waits for ever).
    let waits: Vec<(usize, Arc<crate::event::Event>, Option<u64>)> = plan
        .waits
        .iter()
        .map(|(h, ev)| (*h, ev.clone(), ev.pending()))
        .collect();
    let capturing = crate::stream::capturing(s)?;
    let records = Records(if capturing {
        vec![] // a captured launch records when the graph holding it runs
    } else {
        plan.records
            .iter()
            .map(|(h, ev)| (*h, ev.clone(), ev.issue()))
            .collect()
    });
    crate::stream::run_async(s, Some(NodeType::Graph), move || {
        let _one_at_a_time = exec.running.lock();
        plan.handles.iter().for_each(|h| h.start());
        run_steps(&plan.steps, &|s: &Step| {
            if let Some((_, ev, generation)) = records.0.iter().find(|(n, _, _)| *n == s.key) {
                ev.complete(*generation);
            } else if let Some((_, ev, generation)) = waits.iter().find(|(n, _, _)| *n == s.key) {
                if let Some(generation) = generation {
                    ev.wait(*generation);
                }
            } else if let Some(job) = &s.job {
                job()?;
            }
            Ok(())
        })
    })
}

/// Records a launch issued: each completes when dropped, if its node did not complete it first.
struct Records(Vec<(usize, Arc<crate::event::Event>, u64)>);

impl Drop for Records {
    fn drop(&mut self) {
        for (_, ev, generation) in &self.0 {
            ev.complete(*generation);
        }
    }
}

/// `cuGraphDebugDotPrint`: the graph in Graphviz's language, each node with its type (and a kernel
/// node with its kernel's name and launch shape).
unsafe fn dot(g: Handle, path: *const c_char) -> Result<(), CUresult> {
    init_check()?;
    if path.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let graph = GRAPHS.get(g as usize)?;
    let mut text = format!("digraph graph_{g:p} {{\n");
    let nodes = graph.nodes.lock().clone();
    for (i, (h, _)) in nodes.iter().enumerate() {
        let node = NODES.get(*h)?;
        let mut label = node.kind.name().to_string();
        if let Some(k) = node.kernel.lock().as_ref() {
            let name = crate::launch::kernel_name(k.func as Handle).unwrap_or_default();
            label = format!(
                "kernel {name}\\ngrid ({}, {}, {}) block ({}, {}, {})",
                k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2]
            );
        }
        text.push_str(&format!("  n{i} [label=\"{label}\"];\n"));
    }
    let index: std::collections::HashMap<usize, usize> = nodes.iter().enumerate().map(|(i, n)| (n.0, i)).collect();
    for (i, (_, deps)) in nodes.iter().enumerate() {
        for d in deps {
            text.push_str(&format!("  n{} -> n{i};\n", index[d]));
        }
    }
    text.push_str("}\n");
    let path = std::ffi::CStr::from_ptr(path).to_string_lossy().into_owned();
    std::fs::write(path, text).map_err(|_| CUDA_ERROR_OPERATING_SYSTEM)
}

/// Writes up to `*n` handles of `list` to `out` (when not null) and the count to `n`.
unsafe fn list_out(list: &[usize], out_: *mut Handle, n: *mut usize) -> Result<(), CUresult> {
    if n.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    if !out_.is_null() {
        for (i, h) in list.iter().take(*n).enumerate() {
            *out_.add(i) = *h as Handle;
        }
        for i in list.len()..*n {
            *out_.add(i) = std::ptr::null_mut();
        }
    }
    // With a list to fill, the count says how many were written; without, how many there are.
    *n = if out_.is_null() { list.len() } else { list.len().min(*n) };
    Ok(())
}

unsafe fn add_dependencies(g: Handle, from: *const Handle, to: *const Handle, n: usize) -> Result<(), CUresult> {
    init_check()?;
    let graph = GRAPHS.get(g as usize)?;
    let (from, to) = (deps_of(from, n)?, deps_of(to, n)?);
    for (&f, &t) in from.iter().zip(to) {
        if NODES.get(f)?.graph != g as usize || NODES.get(t)?.graph != g as usize || f == t {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
    }
    let mut nodes = graph.nodes.lock();
    for (&f, &t) in from.iter().zip(to) {
        let entry = nodes
            .iter_mut()
            .find(|(h, _)| *h == t)
            .ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if entry.1.contains(&f) {
            return Err(CUDA_ERROR_INVALID_VALUE); // the edge exists already
        }
        entry.1.push(f);
    }
    Ok(())
}

/// Edge data given to a `_v2` call: none, or every edge's `CUgraphEdgeData` (8 bytes) all zeros, a
/// plain dependency. Other edges (programmatic dependent launch ports) are not supported.
unsafe fn plain_edges(edges: *const c_void, n: usize) -> Result<(), CUresult> {
    if edges.is_null() || crate::c_array(edges as *const u64, n)?.iter().all(|&e| e == 0) {
        Ok(())
    } else {
        Err(CUDA_ERROR_NOT_SUPPORTED)
    }
}

/// A `_v2` query that gives edge data beside a list of nodes (`list`): the query itself, then the
/// data of the `*n` edges it gave, when asked for. Every edge is a plain dependency, all zeros, and
/// cuda.h gives edge data only with the nodes.
unsafe fn with_edge_data(
    list: *mut Handle,
    edges: *mut c_void,
    n: *mut usize,
    query: impl FnOnce() -> Result<(), CUresult>,
) -> Result<(), CUresult> {
    if !edges.is_null() && list.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    query()?;
    if !edges.is_null() {
        std::ptr::write_bytes(edges as *mut u64, 0, *n);
    }
    Ok(())
}

unsafe fn remove_dependencies(g: Handle, from: *const Handle, to: *const Handle, n: usize) -> Result<(), CUresult> {
    init_check()?;
    let graph = GRAPHS.get(g as usize)?;
    if graph.has_memory_nodes() {
        return Err(CUDA_ERROR_NOT_SUPPORTED); // as for `destroy_node`
    }
    let (from, to) = (deps_of(from, n)?, deps_of(to, n)?);
    let mut nodes = graph.nodes.lock();
    // Every edge must exist before any is removed.
    let has = |nodes: &[(usize, Vec<usize>)], f: usize, t: usize| nodes.iter().any(|(h, d)| *h == t && d.contains(&f));
    if !from.iter().zip(to).all(|(&f, &t)| has(&nodes, f, t)) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    for (&f, &t) in from.iter().zip(to) {
        if let Some((_, d)) = nodes.iter_mut().find(|(h, _)| *h == t) {
            d.retain(|&x| x != f);
        }
    }
    Ok(())
}

/// The nodes of `node`'s graph that depend on it, in the order they were added.
fn dependents(node: Handle) -> Result<Vec<usize>, CUresult> {
    let graph = GRAPHS.get(NODES.get(node as usize)?.graph)?;
    let nodes = graph.nodes.lock();
    Ok(nodes
        .iter()
        .filter(|(_, d)| d.contains(&(node as usize)))
        .map(|(h, _)| *h)
        .collect())
}

/// `cuGraphGetEdges`: the graph's edges as pairs (dependency, dependent), in the order the
/// dependents were added; like [`list_out`], up to `*n` of them when the lists are given.
unsafe fn graph_edges(g: Handle, from: *mut Handle, to: *mut Handle, n: *mut usize) -> Result<(), CUresult> {
    init_check()?;
    if n.is_null() || from.is_null() != to.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let graph = GRAPHS.get(g as usize)?;
    let edges: Vec<(usize, usize)> = graph
        .nodes
        .lock()
        .iter()
        .flat_map(|(h, deps)| deps.iter().map(move |d| (*d, *h)))
        .collect();
    let (f, t): (Vec<usize>, Vec<usize>) = edges.into_iter().unzip();
    let room = *n;
    list_out(&f, from, n)?;
    *n = room;
    list_out(&t, to, n)
}

/// `cuGraphDestroyNode`: the node leaves its graph, with every edge to or from it.
/// As cuda.h says, nodes and edges of a graph with allocation or free nodes cannot be deleted.
fn destroy_node(node: Handle) -> Result<(), CUresult> {
    let graph = GRAPHS.get(NODES.get(node as usize)?.graph)?;
    if graph.has_memory_nodes() {
        return Err(CUDA_ERROR_NOT_SUPPORTED);
    }
    {
        let mut nodes = graph.nodes.lock();
        nodes.retain(|(h, _)| *h != node as usize);
        for (_, d) in nodes.iter_mut() {
            d.retain(|&x| x != node as usize);
        }
    }
    drop_graphs(&NODES.remove(node as usize)?.graphs());
    Ok(())
}

unsafe fn node_dependencies(node: Handle, deps: *mut Handle, n: *mut usize) -> Result<(), CUresult> {
    init_check()?;
    let graph = GRAPHS.get(NODES.get(node as usize)?.graph)?;
    let list = graph
        .nodes
        .lock()
        .iter()
        .find(|(h, _)| *h == node as usize)
        .map(|(_, d)| d.clone())
        .unwrap_or_default();
    list_out(&list, deps, n)
}

api! {
    exports = graph_exports;

    fn cuGraphCreate(pg: *mut Handle, flags: c_uint) {
        init_check()?;
        if pg.is_null() || flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        *pg = GRAPHS.insert(Graph::default()) as Handle;
        Ok(())
    }
    fn cuGraphDestroy(g: Handle) {
        init_check()?;
        drop_graph(g as usize)
    }
    fn cuGraphAddKernelNode(pn: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *const KernelNodeParams) {
        add_kernel_node(pn, g, deps, n, p, false)
    }
    fn cuGraphAddKernelNode_v2(pn: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *const KernelNodeParams) {
        add_kernel_node(pn, g, deps, n, p, true)
    }
    fn cuGraphKernelNodeGetParams_v2(node: Handle, p: *mut KernelNodeParams) {
        init_check()?;
        let node = NODES.get(node as usize)?;
        let k = node.kernel.lock().clone().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let p = p.as_mut().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        p.v1 = KernelNodeParamsV1 {
            func: k.func as Handle,
            grid: k.grid,
            block: k.block,
            shared: k.shared,
            // The node's own copy of the arguments, valid while its parameters are not set again.
            params: k.arg_ptrs.as_ptr() as *mut *mut c_void,
            extra: std::ptr::null_mut(),
        };
        p.kern = std::ptr::null_mut();
        p.ctx = std::ptr::null_mut();
        Ok(())
    }
    fn cuGraphKernelNodeSetParams_v2(node: Handle, p: *const KernelNodeParams) {
        init_check()?;
        let node = NODES.get(node as usize)?;
        if node.kind != NodeType::Kernel {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (params, job) = kernel_node(p, true)?;
        *node.job.lock() = Some(job);
        *node.kernel.lock() = Some(params);
        Ok(())
    }
    fn cuGraphAddMemsetNode(pn: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *const MemsetNodeParams, _ctx: Handle) {
        init_check()?;
        let p = p.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if !matches!(p.element_size, 1 | 2 | 4) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let job = crate::memory::fill_job(p.dst, p.pitch, p.value, p.element_size as usize, p.width, p.height)?;
        add_node(pn, g, deps, n, NodeType::Memset, Some(job)).map(drop)
    }
    fn cuGraphAddMemcpyNode(pn: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *const crate::memory::Memcpy3D, _ctx: Handle) {
        init_check()?;
        let job = crate::memory::copy3d_job(p)?;
        add_node(pn, g, deps, n, NodeType::Memcpy, Some(job)).map(drop)
    }
    fn cuGraphAddHostNode(pn: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *const HostNodeParams) {
        init_check()?;
        let p = p.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let f = p.f.ok_or(CUDA_ERROR_INVALID_VALUE)?;
        add_node(pn, g, deps, n, NodeType::Host, Some(host_job(f, p.data))).map(drop)
    }
    fn cuGraphAddBatchMemOpNode(pn: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *const BatchMemOpParams) {
        init_check()?;
        let (ops, job) = batch_mem_op_node(p)?;
        let h = add_node(pn, g, deps, n, NodeType::BatchMemOp, Some(job))?;
        *NODES.get(h)?.memops.lock() = Some(ops);
        Ok(())
    }
    fn cuGraphBatchMemOpNodeGetParams(node: Handle, p: *mut BatchMemOpParams) {
        init_check()?;
        let p = p.as_mut().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let node = NODES.get(node as usize)?;
        let memops = node.memops.lock();
        let (ctx, words) = memops.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        *p = BatchMemOpParams {
            ctx: *ctx as Handle,
            count: words.len() as c_uint,
            ops: words.as_ptr(),
            flags: 0,
        };
        Ok(())
    }
    fn cuGraphBatchMemOpNodeSetParams(node: Handle, p: *const BatchMemOpParams) {
        init_check()?;
        let node = NODES.get(node as usize)?;
        if node.kind != NodeType::BatchMemOp || node.memops.lock().is_none() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (ops, job) = batch_mem_op_node(p)?;
        *node.job.lock() = Some(job);
        *node.memops.lock() = Some(ops);
        Ok(())
    }
    fn cuGraphExecBatchMemOpNodeSetParams(e: Handle, node: Handle, p: *const BatchMemOpParams) {
        init_check()?;
        exec_set_job(e, node, NodeType::BatchMemOp, || Ok(batch_mem_op_node(p)?.1))
    }
    fn cuGraphAddEmptyNode(pn: *mut Handle, g: Handle, deps: *const Handle, n: usize) {
        add_node(pn, g, deps, n, NodeType::Empty, None).map(drop)
    }
    fn cuGraphAddChildGraphNode(pn: *mut Handle, g: Handle, deps: *const Handle, n: usize, child: Handle) {
        init_check()?;
        // The child is copied as it is now, as CUDA clones it; the copy is planned at instantiation.
        GRAPHS.get(g as usize)?;
        let copy = clone_graph(child as usize)?;
        match add_node(pn, g, deps, n, NodeType::Graph, None) {
            Ok(node) => {
                *NODES.get(node)?.child.lock() = Some(copy);
                Ok(())
            }
            Err(e) => {
                let _ = drop_graph(copy);
                Err(e)
            }
        }
    }
    fn cuGraphChildGraphNodeGetGraph(node: Handle, pg: *mut Handle) {
        init_check()?;
        let n = NODES.get(node as usize)?;
        let child = *n.child.lock();
        out(pg, child.ok_or(CUDA_ERROR_INVALID_VALUE)? as Handle)
    }
    fn cuGraphClone(pg: *mut Handle, g: Handle) {
        init_check()?;
        if pg.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        *pg = clone_graph(g as usize)? as Handle;
        Ok(())
    }
    fn cuGraphAddEventRecordNode(pn: *mut Handle, g: Handle, deps: *const Handle, n: usize, ev: Handle) {
        init_check()?;
        // At the top level, recorded when a launch is queued (so waits issued after the launch wait
        // for it) and complete when the node runs: see `graph_launch`.
        let e = EVENTS.get(ev as usize)?;
        let h = add_node(pn, g, deps, n, NodeType::EventRecord, Some(event_record_job(e.clone())))?;
        *NODES.get(h)?.event.lock() = Some(e);
        Ok(())
    }
    fn cuGraphAddEventWaitNode(pn: *mut Handle, g: Handle, deps: *const Handle, n: usize, ev: Handle) {
        init_check()?;
        let e = EVENTS.get(ev as usize)?;
        let h = add_node(pn, g, deps, n, NodeType::WaitEvent, Some(event_wait_job(e.clone())))?;
        *NODES.get(h)?.event.lock() = Some(e);
        Ok(())
    }
    fn cuGraphAddDependencies(g: Handle, from: *const Handle, to: *const Handle, n: usize) {
        add_dependencies(g, from, to, n)
    }
    fn cuGraphAddDependencies_v2(g: Handle, from: *const Handle, to: *const Handle, edges: *const c_void, n: usize) {
        plain_edges(edges, n)?;
        add_dependencies(g, from, to, n)
    }
    fn cuGraphRemoveDependencies(g: Handle, from: *const Handle, to: *const Handle, n: usize) {
        remove_dependencies(g, from, to, n)
    }
    fn cuGraphRemoveDependencies_v2(g: Handle, from: *const Handle, to: *const Handle, edges: *const c_void, n: usize) {
        plain_edges(edges, n)?;
        remove_dependencies(g, from, to, n)
    }
    fn cuGraphGetEdges(g: Handle, from: *mut Handle, to: *mut Handle, n: *mut usize) {
        graph_edges(g, from, to, n)
    }
    fn cuGraphGetEdges_v2(g: Handle, from: *mut Handle, to: *mut Handle, edges: *mut c_void, n: *mut usize) {
        with_edge_data(from, edges, n, || graph_edges(g, from, to, n))
    }
    fn cuGraphNodeGetDependentNodes(node: Handle, out_: *mut Handle, n: *mut usize) {
        init_check()?;
        list_out(&dependents(node)?, out_, n)
    }
    fn cuGraphNodeGetDependentNodes_v2(node: Handle, out_: *mut Handle, edges: *mut c_void, n: *mut usize) {
        init_check()?;
        with_edge_data(out_, edges, n, || list_out(&dependents(node)?, out_, n))
    }
    fn cuGraphDestroyNode(node: Handle) {
        init_check()?;
        destroy_node(node)
    }
    fn cuGraphGetNodes(g: Handle, nodes: *mut Handle, n: *mut usize) {
        init_check()?;
        let graph = GRAPHS.get(g as usize)?;
        let list: Vec<usize> = graph.nodes.lock().iter().map(|(h, _)| *h).collect();
        list_out(&list, nodes, n)
    }
    fn cuGraphGetRootNodes(g: Handle, nodes: *mut Handle, n: *mut usize) {
        init_check()?;
        let graph = GRAPHS.get(g as usize)?;
        let list: Vec<usize> = graph.nodes.lock().iter().filter(|(_, d)| d.is_empty()).map(|(h, _)| *h).collect();
        list_out(&list, nodes, n)
    }
    fn cuGraphNodeGetDependencies(node: Handle, deps: *mut Handle, n: *mut usize) {
        node_dependencies(node, deps, n)
    }
    fn cuGraphNodeGetDependencies_v2(node: Handle, deps: *mut Handle, edges: *mut c_void, n: *mut usize) {
        with_edge_data(deps, edges, n, || node_dependencies(node, deps, n))
    }
    fn cuGraphNodeGetType(node: Handle, t: *mut c_int) {
        init_check()?;
        out(t, NODES.get(node as usize)?.kind as c_int)
    }
    fn cuGraphInstantiateWithFlags(pe: *mut Handle, g: Handle, flags: u64) {
        // AUTO_FREE_ON_LAUNCH (1) and the others concern allocation nodes and device launch.
        if flags & !0xf != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        instantiate(pe, g)
    }
    fn cuGraphInstantiateWithParams[cuGraphInstantiateWithParams_ptsz](pe: *mut Handle, g: Handle, p: *mut InstantiateParams) {
        init_check()?;
        let p = p.as_mut().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        p.error_node = std::ptr::null_mut();
        p.result = 1; // CUDA_GRAPH_INSTANTIATE_ERROR until it succeeds
        // DEVICE_LAUNCH (4) makes a graph kernels launch; the others (auto-free, upload, node
        // priority) need nothing more of a graph that runs on the host.
        if p.flags & !0xb != 0 {
            return Err(if p.flags & 4 != 0 { CUDA_ERROR_NOT_SUPPORTED } else { CUDA_ERROR_INVALID_VALUE });
        }
        if p.flags & 2 != 0 {
            resolve(p.upload_stream)?; // uploading: nothing to move, but the stream must be one
        }
        let r = instantiate(pe, g);
        // CUgraphInstantiateResult: SUCCESS, INVALID_STRUCTURE (a cycle, which `instantiate` refuses
        // with INVALID_VALUE), or ERROR.
        p.result = match r {
            Ok(()) => 0,
            Err(CUDA_ERROR_INVALID_VALUE) => 2,
            Err(_) => 1,
        };
        r
    }
    fn cuGraphInstantiate_v2(pe: *mut Handle, g: Handle, error_node: *mut Handle, log: *mut c_char, log_size: usize) {
        let r = instantiate(pe, g);
        if !error_node.is_null() {
            *error_node = std::ptr::null_mut();
        }
        if r.is_err() && !log.is_null() && log_size > 0 {
            let msg = b"the graph's dependencies form a cycle\0";
            let k = msg.len().min(log_size);
            std::ptr::copy_nonoverlapping(msg.as_ptr() as *const c_char, log, k);
            *log.add(k - 1) = 0;
        }
        r
    }
    fn cuGraphUpload[cuGraphUpload_ptsz](e: Handle, s: Handle) {
        // Nothing to upload: the graph's work already lives where it runs.
        init_check()?;
        EXECS.get(e as usize)?;
        resolve(s)?;
        Ok(())
    }
    fn cuGraphLaunch[cuGraphLaunch_ptsz](e: Handle, s: Handle) {
        graph_launch(e, s)
    }
    fn cuGraphExecKernelNodeSetParams(e: Handle, node: Handle, p: *const KernelNodeParams) {
        exec_kernel_params(e, node, p, false)
    }
    fn cuGraphExecKernelNodeSetParams_v2(e: Handle, node: Handle, p: *const KernelNodeParams) {
        exec_kernel_params(e, node, p, true)
    }
    fn cuGraphExecUpdate(e: Handle, g: Handle, error_node: *mut Handle, result: *mut c_int) {
        if error_node.is_null() || result.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (r, node) = exec_update(e, g)?;
        *result = r;
        *error_node = node as Handle;
        if r == 0 { Ok(()) } else { Err(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) }
    }
    fn cuGraphExecUpdate_v2(e: Handle, g: Handle, info: *mut UpdateResultInfo) {
        let info = info.as_mut().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let (r, node) = exec_update(e, g).inspect_err(|_| {
            info.result = 1; // CU_GRAPH_EXEC_UPDATE_ERROR
        })?;
        *info = UpdateResultInfo { result: r, error_node: node as Handle, error_from_node: std::ptr::null_mut() };
        if r == 0 { Ok(()) } else { Err(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) }
    }
    fn cuGraphExecDestroy(e: Handle) {
        init_check()?;
        EXECS.remove(e as usize)?;
        Ok(())
    }
    fn cuGraphDebugDotPrint(g: Handle, path: *const c_char, _flags: c_uint) {
        dot(g, path)
    }
}
