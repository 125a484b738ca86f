//! A COM malloc spy (`IMallocSpy`, registered with `CoRegisterMallocSpy`): every
//! `CoTaskMemFree` of the process passes through `PreFree`, which is how the stand-in learns
//! that a string it handed out was freed. The vtable follows objidl.h's order. A test process
//! registers it through `HcnStandinCountFrees` before its second thread starts.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use windows_sys::Win32::System::Com::CoRegisterMallocSpy;
use windows_sys::Win32::System::LibraryLoader::{
    GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS, GET_MODULE_HANDLE_EX_FLAG_PIN, GetModuleHandleExW,
};
use windows_sys::core::{GUID, HRESULT};

const S_OK: HRESULT = 0;
const E_NOINTERFACE: HRESULT = 0x8000_4002_u32 as HRESULT;
const E_FAIL: HRESULT = 0x8000_4005_u32 as HRESULT;
const IID_IUNKNOWN: GUID = GUID::from_u128(0x00000000_0000_0000_c000_000000000046);
const IID_IMALLOCSPY: GUID = GUID::from_u128(0x0000001d_0000_0000_c000_000000000046);

#[repr(C)]
struct Vtbl {
    query_interface: unsafe extern "system" fn(*mut Spy, *const GUID, *mut *mut c_void) -> HRESULT,
    add_ref: unsafe extern "system" fn(*mut Spy) -> u32,
    release: unsafe extern "system" fn(*mut Spy) -> u32,
    pre_alloc: unsafe extern "system" fn(*mut Spy, usize) -> usize,
    post_alloc: unsafe extern "system" fn(*mut Spy, *mut c_void) -> *mut c_void,
    pre_free: unsafe extern "system" fn(*mut Spy, *mut c_void, i32) -> *mut c_void,
    post_free: unsafe extern "system" fn(*mut Spy, i32),
    pre_realloc:
        unsafe extern "system" fn(*mut Spy, *mut c_void, usize, *mut *mut c_void, i32) -> usize,
    post_realloc: unsafe extern "system" fn(*mut Spy, *mut c_void, i32) -> *mut c_void,
    pre_get_size: unsafe extern "system" fn(*mut Spy, *mut c_void, i32) -> *mut c_void,
    post_get_size: unsafe extern "system" fn(*mut Spy, usize, i32) -> usize,
    pre_did_alloc: unsafe extern "system" fn(*mut Spy, *mut c_void, i32) -> *mut c_void,
    post_did_alloc: unsafe extern "system" fn(*mut Spy, *mut c_void, i32, i32) -> i32,
    pre_heap_minimize: unsafe extern "system" fn(*mut Spy),
    post_heap_minimize: unsafe extern "system" fn(*mut Spy),
}

#[repr(C)]
struct Spy {
    vtbl: *const Vtbl,
}

// SAFETY: the spy has no state of its own; its vtable is immutable.
unsafe impl Sync for Spy {}

unsafe extern "system" fn query_interface(
    this: *mut Spy,
    iid: *const GUID,
    out: *mut *mut c_void,
) -> HRESULT {
    if out.is_null() || iid.is_null() {
        return E_NOINTERFACE;
    }
    // SAFETY: iid points to a GUID; out is an out-pointer.
    let iid = unsafe { &*iid };
    let same = |g: &GUID| {
        g.data1 == iid.data1 && g.data2 == iid.data2 && g.data3 == iid.data3 && g.data4 == iid.data4
    };
    if same(&IID_IUNKNOWN) || same(&IID_IMALLOCSPY) {
        unsafe { *out = this.cast() };
        S_OK
    } else {
        unsafe { *out = std::ptr::null_mut() };
        E_NOINTERFACE
    }
}
unsafe extern "system" fn add_ref(_: *mut Spy) -> u32 {
    2
}
unsafe extern "system" fn release(_: *mut Spy) -> u32 {
    1
}
unsafe extern "system" fn pre_alloc(_: *mut Spy, n: usize) -> usize {
    n
}
unsafe extern "system" fn post_alloc(_: *mut Spy, p: *mut c_void) -> *mut c_void {
    p
}
unsafe extern "system" fn pre_free(_: *mut Spy, p: *mut c_void, _: i32) -> *mut c_void {
    super::freed(p as usize);
    p
}
unsafe extern "system" fn post_free(_: *mut Spy, _: i32) {}
unsafe extern "system" fn pre_realloc(
    _: *mut Spy,
    p: *mut c_void,
    n: usize,
    out: *mut *mut c_void,
    _: i32,
) -> usize {
    if !out.is_null() {
        unsafe { *out = p };
    }
    n
}
unsafe extern "system" fn post_realloc(_: *mut Spy, p: *mut c_void, _: i32) -> *mut c_void {
    p
}
unsafe extern "system" fn pre_get_size(_: *mut Spy, p: *mut c_void, _: i32) -> *mut c_void {
    p
}
unsafe extern "system" fn post_get_size(_: *mut Spy, n: usize, _: i32) -> usize {
    n
}
unsafe extern "system" fn pre_did_alloc(_: *mut Spy, p: *mut c_void, _: i32) -> *mut c_void {
    p
}
unsafe extern "system" fn post_did_alloc(_: *mut Spy, _: *mut c_void, _: i32, actual: i32) -> i32 {
    actual
}
unsafe extern "system" fn heap_minimize(_: *mut Spy) {}

static VTBL: Vtbl = Vtbl {
    query_interface,
    add_ref,
    release,
    pre_alloc,
    post_alloc,
    pre_free,
    post_free,
    pre_realloc,
    post_realloc,
    pre_get_size,
    post_get_size,
    pre_did_alloc,
    post_did_alloc,
    pre_heap_minimize: heap_minimize,
    post_heap_minimize: heap_minimize,
};

static SPY: Spy = Spy { vtbl: &VTBL };
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Whether the spy counts frees.
pub fn registered() -> bool {
    REGISTERED.load(Ordering::SeqCst)
}

/// Registers the spy, once. The caller has one thread. Wine's allocator reads the spy twice
/// in one allocation and enters its critical section only if the first read saw one
/// (Wine 8's dlls/combase/malloc.c, `allocator_Alloc` and `allocator_Realloc`: `if
/// (allocator.spy)` before `HeapAlloc` and again after it). A spy registered by one thread
/// while another allocates between the two reads makes that thread leave a section it never
/// entered; the process then crashed, one run in forty, and Wine's debugger hung the run.
pub fn register() -> HRESULT {
    if registered() {
        return S_OK;
    }
    // COM keeps calling the spy after the caller frees the library (hcn.rs loads it per
    // call): pin this DLL so the spy's code and vtable stay mapped for the process.
    let mut module = std::ptr::null_mut();
    // SAFETY: the address is inside this DLL; the handle is only pinned, never freed.
    let pinned = unsafe {
        GetModuleHandleExW(
            GET_MODULE_HANDLE_EX_FLAG_PIN | GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS,
            std::ptr::addr_of!(SPY) as *const u16,
            &mut module,
        )
    };
    if pinned == 0 {
        return E_FAIL;
    }
    // SAFETY: SPY is a static IMallocSpy whose methods never fail; COM keeps the pointer.
    let hr = unsafe { CoRegisterMallocSpy(std::ptr::addr_of!(SPY) as *mut c_void) };
    if hr >= 0 {
        REGISTERED.store(true, Ordering::SeqCst);
    }
    hr
}
