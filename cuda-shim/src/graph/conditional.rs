//! Conditional nodes (`cuGraphConditionalHandleCreate`, `cuGraphAddNode` with
//! `CU_GRAPH_NODE_TYPE_CONDITIONAL`): an `if` (with an optional `else`), a `while` or a `switch` over
//! body graphs, steered by a value that kernels set with `cudaGraphSetConditional`.
//!
//! A handle is the address of a 32-bit word of device memory holding the value, so the device
//! runtime's `cudaGraphSetConditional` (`device_runtime.ptx`, which the driver links into a module
//! that calls it, as NVIDIA's resolves this builtin itself) is one store. A handle made with
//! `CU_GRAPH_COND_ASSIGN_DEFAULT` takes its default value each time its graph starts to run. The
//! bodies are graphs the node owns; their work is planned when the graph holding the node is
//! instantiated, so what the program adds to them after making the node is part of it. A `while`
//! whose body never clears the value runs for ever, as on a GPU; a kernel in its body still ends when
//! its context is destroyed (the launch then fails, and the loop with it), a body of copies and fills
//! alone does not.

use super::*;
use crate::CUdeviceptr;

/// A conditional handle: its value's word of device memory, and the value each launch of its graph
/// starts from (when `reset`).
pub struct CondHandle {
    ptr: CUdeviceptr,
    default: u32,
    reset: bool,
}

impl CondHandle {
    fn value(&self) -> u32 {
        // SAFETY: the word is device memory this handle owns; kernels write it with a plain store.
        unsafe { std::ptr::read_volatile(self.ptr as *const u32) }
    }

    /// The value a launch of the handle's graph starts from, if it is reset.
    pub fn start(&self) {
        if self.reset {
            // SAFETY: as in `value`.
            unsafe { std::ptr::write_volatile(self.ptr as *mut u32, self.default) };
        }
    }
}

impl Drop for CondHandle {
    fn drop(&mut self) {
        crate::memory::release_now(self.ptr);
    }
}

/// `CUgraphConditionalNodeType`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    If,
    While,
    Switch,
}

/// A conditional node: its handle, kind and body graphs.
pub struct Cond {
    handle: Arc<CondHandle>,
    kind: Kind,
    /// The body graphs, in the array the program is given (`phGraph_out`), which lives as long as
    /// the node.
    bodies: Vec<usize>,
}

impl Cond {
    /// The node's body graphs, which go with it.
    pub fn bodies(&self) -> &[usize] {
        &self.bodies
    }
}

/// What a conditional node does when it runs, with its bodies planned now.
pub fn job(c: &Cond) -> Result<NodeJob, CUresult> {
    let bodies = c
        .bodies
        .iter()
        .map(|&b| plan(&*GRAPHS.get(b)?, None))
        .collect::<Result<Vec<Plan>, CUresult>>()?;
    let (h, kind) = (c.handle.clone(), c.kind);
    Ok(Arc::new(move || match kind {
        Kind::If if h.value() != 0 => run_plan(&bodies[0]),
        Kind::If => bodies.get(1).map_or(Ok(()), run_plan),
        Kind::While => {
            while h.value() != 0 {
                run_plan(&bodies[0])?;
            }
            Ok(())
        }
        Kind::Switch => bodies.get(h.value() as usize).map_or(Ok(()), run_plan),
    }))
}

/// The most bodies a `switch` node has here (cuda.h sets no bound; each body is a graph).
const MAX_SWITCH: c_uint = 1 << 16;

/// `CUDA_CONDITIONAL_NODE_PARAMS`.
#[repr(C)]
pub struct CondParams {
    handle: u64,
    kind: c_uint,
    size: c_uint,
    graphs_out: *mut Handle,
    ctx: Handle,
}

/// `CUgraphNodeParams`: the node's type, then its parameters (a union of 232 bytes).
#[repr(C)]
pub struct NodeParams {
    kind: c_int,
    reserved0: [c_int; 3],
    params: [u64; 29],
    reserved2: i64,
}

/// The handles made so far, by value, for the nodes that name them.
static HANDLES: Mutex<Vec<std::sync::Weak<CondHandle>>> = Mutex::new(Vec::new());

/// `cuGraphAddNode`: conditional and empty nodes (the node types the other `cuGraphAdd*Node` calls
/// do not make); other types are not supported through it.
pub(super) unsafe fn add_node_params(
    pn: *mut Handle,
    g: Handle,
    deps: *const Handle,
    n: usize,
    p: *mut NodeParams,
) -> Result<(), CUresult> {
    init_check()?;
    let p = p.as_mut().ok_or(CUDA_ERROR_INVALID_VALUE)?;
    match p.kind {
        5 => add_node(pn, g, deps, n, NodeType::Empty, None).map(drop),
        13 => {
            let c = &mut *(p.params.as_mut_ptr() as *mut CondParams);
            let kind = match (c.kind, c.size) {
                (0, 1 | 2) => Kind::If,
                (1, 1) => Kind::While,
                (2, 1..=MAX_SWITCH) => Kind::Switch,
                _ => return Err(CUDA_ERROR_INVALID_VALUE),
            };
            let handle = {
                let mut handles = HANDLES.lock();
                handles.retain(|w| w.strong_count() > 0);
                handles
                    .iter()
                    .filter_map(std::sync::Weak::upgrade)
                    .find(|h| h.ptr == c.handle)
                    .ok_or(CUDA_ERROR_INVALID_VALUE)?
            };
            let bodies: Vec<usize> = (0..c.size).map(|_| GRAPHS.insert(Graph::default())).collect();
            let node = match add_node(pn, g, deps, n, NodeType::Conditional, None) {
                Ok(node) => node,
                Err(e) => {
                    drop_graphs(&bodies);
                    return Err(e);
                }
            };
            let cond = Cond { handle, kind, bodies };
            c.graphs_out = cond.bodies.as_ptr() as *mut Handle;
            *NODES.get(node)?.cond.lock() = Some(cond);
            Ok(())
        }
        _ => Err(CUDA_ERROR_NOT_SUPPORTED),
    }
}

api! {
    exports = conditional_exports;

    fn cuGraphConditionalHandleCreate(out_: *mut u64, g: Handle, _ctx: Handle, default: c_uint, flags: c_uint) {
        init_check()?;
        if out_.is_null() || flags > 1 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let graph = GRAPHS.get(g as usize)?;
        let ptr = crate::memory::alloc_device(4)?;
        std::ptr::write_volatile(ptr as *mut u32, default);
        let h = Arc::new(CondHandle {
            ptr,
            default,
            reset: flags & 1 != 0,
        });
        HANDLES.lock().push(Arc::downgrade(&h));
        graph.handles.lock().push(h);
        *out_ = ptr;
        Ok(())
    }
    fn cuGraphAddNode(pn: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *mut NodeParams) {
        add_node_params(pn, g, deps, n, p)
    }
    fn cuGraphAddNode_v2(pn: *mut Handle, g: Handle, deps: *const Handle, edges: *const c_void, n: usize, p: *mut NodeParams) {
        plain_edges(edges, n)?;
        add_node_params(pn, g, deps, n, p)
    }
    fn cuGraphAddNode_v3(pn: *mut Handle, g: Handle, deps: *const Handle, edges: *const c_void, n: usize, p: *mut NodeParams) {
        plain_edges(edges, n)?;
        add_node_params(pn, g, deps, n, p)
    }
}
