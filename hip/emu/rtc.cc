// rtc.cc — the emulated runtime compiler: libnvrtc (built with PBEMU_CUDA)
// or libhiprtc (PBEMU_HIP). "Compiling" a program runs the host C++
// compiler twice: (1) the preprocessor over pbemu_device.h's macros and
// the source (-nostdinc: like nvrtc and hiprtc there are no std headers),
// after which every __global__ function gets an entry and every
// __shared__ variable becomes per-block storage; (2) a compile of
// pbemu_device.h's code + that text into a shared object. The code object
// is the shared object's bytes (an ELF, as a cubin or a HIP code object
// is); the emulated driver loads it with dlopen. Objects are cached by a
// SHA-256 of everything that decides them ($PLEXBENCH_EMU_CACHE_DIR;
// default $XDG_CACHE_HOME or ~/.cache /plexbench/gpu-emu, without a home
// $TMPDIR/plexbench-gpu-emu-UID; "off" disables).
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common.h"

extern char** environ;

#ifndef PBEMU_DEFAULT_CXX
#define PBEMU_DEFAULT_CXX "c++"
#endif

// pbemu_device.h, embedded at build time.
extern "C" const char pbemu_device_h[];
asm(".pushsection .rodata\n"
    ".globl pbemu_device_h\n"
    ".hidden pbemu_device_h\n"
    "pbemu_device_h:\n"
    ".incbin \"" PBEMU_DEVICE_H_PATH "\"\n"
    ".byte 0\n"
    ".popsection\n");

#ifdef PBEMU_HIP
#define RTC(name) hiprtc##name
static const char* const kPrefix = "hiprtc";
static const char* const kDialect = "hip";
#else
#define RTC(name) nvrtc##name
static const char* const kPrefix = "nvrtc";
static const char* const kDialect = "cuda";
#endif

enum {
    RTC_SUCCESS = 0,
    RTC_OUT_OF_MEMORY = 1,
    RTC_PROGRAM_CREATION_FAILURE = 2,
    RTC_INVALID_INPUT = 3,
    RTC_INVALID_PROGRAM = 4,
    RTC_INVALID_OPTION = 5,
    RTC_COMPILATION = 6,
    RTC_BUILTIN_OPERATION_FAILURE = 7,
    RTC_INTERNAL_ERROR = 11,
};

namespace {

struct Prog {
    std::string src, name;
    std::vector<std::pair<std::string, std::string>> headers; // include name, text
    std::string log, code;
    bool compiled = false;
    bool virtual_arch = false; // compute_XX: no cubin
};

std::mutex mu;
std::set<Prog*> progs;

struct Config {
    bool fail_compile = false;
    bool traffic = false; // PLEXBENCH_EMU_TRAFFIC=1: modules count their loads
    std::string cache_dir; // "" = none
    std::string cxx;       // "" = none found
    std::string cxx_ident;
    bool keep = false;
};

std::string find_in_path(const std::string& name) {
    if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
    const char* path = getenv("PATH");
    std::string p = path ? path : "/usr/bin:/bin";
    size_t i = 0;
    while (i <= p.size()) {
        size_t j = p.find(':', i);
        if (j == std::string::npos) j = p.size();
        std::string d = p.substr(i, j - i);
        if (d.empty()) d = ".";
        std::string c = d + "/" + name;
        if (access(c.c_str(), X_OK) == 0) return c;
        i = j + 1;
    }
    return "";
}

const Config& config() {
    static Config c = [] {
        Config c;
        c.fail_compile = env_long("PLEXBENCH_EMU_FAIL_COMPILE", 0) != 0;
        c.keep = env_long("PLEXBENCH_EMU_KEEP", 0) != 0;
        c.traffic = env_long("PLEXBENCH_EMU_TRAFFIC", 0) != 0;
        std::string d = env_str("PLEXBENCH_EMU_CACHE_DIR");
        if (d == "off" || d == "-") {
            d.clear();
        } else if (d.empty()) {
            std::string base = env_str("XDG_CACHE_HOME");
            if (base.empty() && !env_str("HOME").empty()) base = env_str("HOME") + "/.cache";
            const char* tmp = getenv("TMPDIR");
            d = base.empty() ? std::string(tmp && *tmp ? tmp : "/tmp") + "/plexbench-gpu-emu-" + std::to_string((long)getuid())
                             : base + "/plexbench/gpu-emu";
        }
        c.cache_dir = d;
        std::vector<std::string> cands;
        if (!env_str("PLEXBENCH_EMU_CXX").empty()) cands.push_back(env_str("PLEXBENCH_EMU_CXX"));
        else cands = {PBEMU_DEFAULT_CXX, "c++", "g++", "clang++"};
        for (auto& n : cands) {
            c.cxx = find_in_path(n);
            if (!c.cxx.empty()) break;
        }
        if (!c.cxx.empty()) {
            char real[4096];
            std::string r = realpath(c.cxx.c_str(), real) ? real : c.cxx;
            struct stat st;
            c.cxx_ident = r;
            if (stat(r.c_str(), &st) == 0)
                c.cxx_ident += " " + std::to_string((long long)st.st_size) + " " + std::to_string((long long)st.st_mtime);
        }
        return c;
    }();
    return c;
}

bool write_file(const std::string& path, const std::string& data) {
    FILE* f = fopen(path.c_str(), "wb");
    if (!f) return false;
    bool ok = fwrite(data.data(), 1, data.size(), f) == data.size();
    return fclose(f) == 0 && ok;
}

bool read_file(const std::string& path, std::string* out) {
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) return false;
    out->clear();
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
    fclose(f);
    return true;
}

void mkdirs(const std::string& dir) {
    for (size_t i = 1; i <= dir.size(); i++)
        if (i == dir.size() || dir[i] == '/') mkdir(dir.substr(0, i).c_str(), 0755);
}

void rmtree(const std::string& dir) {
    nftw(dir.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return remove(p); }, 16, FTW_DEPTH | FTW_PHYS);
}

// run runs argv with stdout and stderr into log; true on exit status 0.
bool run(const std::vector<std::string>& argv, const std::string& logpath, std::string* log) {
    std::vector<char*> a;
    for (auto& s : argv) a.push_back((char*)s.c_str());
    a.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, logpath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, a.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        *log += "cannot run " + argv[0] + ": " + strerror(rc) + "\n";
        return false;
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    std::string out;
    read_file(logpath, &out);
    *log += out;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool is_ident(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

// Token-level helpers over preprocessed text (no comments left).
size_t skip_space(const std::string& s, size_t i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    return i;
}

// stmt_start is the index after the last ';', '{' or '}' before i.
size_t stmt_start(const std::string& s, size_t i) {
    while (i > 0) {
        char c = s[i - 1];
        if (c == ';' || c == '{' || c == '}') break;
        i--;
    }
    return i;
}

bool has_word(const std::string& s, const char* w) {
    size_t n = strlen(w);
    for (size_t i = s.find(w); i != std::string::npos; i = s.find(w, i + 1)) {
        if ((i == 0 || !is_ident(s[i - 1])) && (i + n >= s.size() || !is_ident(s[i + n]))) return true;
    }
    return false;
}

std::string strip_attributes(std::string t) {
    for (size_t i; (i = t.find("__attribute__")) != std::string::npos;) {
        size_t j = t.find('(', i);
        if (j == std::string::npos) break;
        int depth = 0;
        size_t k = j;
        for (; k < t.size(); k++) {
            if (t[k] == '(') depth++;
            if (t[k] == ')' && --depth == 0) break;
        }
        t.erase(i, k + 1 - i);
    }
    return t;
}

std::string trim(const std::string& s) {
    size_t a = 0, b = s.size();
    while (a < b && isspace((unsigned char)s[a])) a++;
    while (b > a && isspace((unsigned char)s[b - 1])) b--;
    return s.substr(a, b - a);
}

// declarator_names are the names a declaration (no ';') declares:
// "thread_local int a[4], b[4]" → a, b.
std::vector<std::string> declarator_names(const std::string& decl) {
    std::vector<std::string> names;
    std::string t = strip_attributes(decl);
    int depth = 0;
    size_t start = 0;
    for (size_t k = 0; k <= t.size(); k++) {
        char c = k < t.size() ? t[k] : ',';
        if (c == '[' || c == '(' || c == '{') depth++;
        if (c == ']' || c == ')' || c == '}') depth--;
        if (c != ',' || depth != 0) continue;
        std::string d = t.substr(start, k - start);
        start = k + 1;
        size_t e = d.find_first_of("[=");
        if (e == std::string::npos) e = d.size();
        while (e > 0 && !is_ident(d[e - 1])) e--;
        size_t a = e;
        while (a > 0 && is_ident(d[a - 1])) a--;
        if (a < e) names.push_back(d.substr(a, e - a));
    }
    return names;
}

// rewrite turns the preprocessed source into the module's text: the
// __shared__ markers into per-block storage, each followed by a note of
// its size (pbemu::shared_note), and collects the __global__ functions
// that have a body (templates are skipped: they have no extern "C" name
// to look up) with their __launch_bounds__ (bounds[i], "" for none).
std::string rewrite(const std::string& ii, std::vector<std::string>* kernels, std::vector<std::string>* bounds,
                    std::string* err) {
    static const std::string G = "__pbemu_global__", S = "__pbemu_shared__", LB = "__pbemu_lb__";
    std::string out;
    size_t i = 0;
    unsigned notes = 0;
    while (i < ii.size()) {
        size_t g = ii.find(G, i), sh = ii.find(S, i);
        size_t m = g < sh ? g : sh;
        if (m == std::string::npos) {
            out += ii.substr(i);
            break;
        }
        if (m == g) {
            out += ii.substr(i, g - i);
            i = g + G.size();
            size_t st = stmt_start(ii, g);
            bool templ = has_word(ii.substr(st, g - st), "template");
            std::string bound, name;
            size_t p = i, k = i;
            for (;;) {
                p = ii.find('(', k);
                if (p == std::string::npos) break;
                size_t q = p;
                while (q > i && !is_ident(ii[q - 1])) q--;
                size_t a = q;
                while (a > i && is_ident(ii[a - 1])) a--;
                name = ii.substr(a, q - a);
                int depth = 0;
                for (k = p; k < ii.size(); k++) {
                    if (ii[k] == '(') depth++;
                    if (ii[k] == ')' && --depth == 0) break;
                }
                if (name != LB) break;
                bound = trim(ii.substr(p + 1, k - p - 1)); // __launch_bounds__(threads[, …])
                k++;
            }
            if (p == std::string::npos) continue;
            size_t after = skip_space(ii, k + 1);
            bool body = after < ii.size() && ii[after] == '{';
            if (!templ && body && !name.empty()) {
                bool seen = false;
                for (auto& n : *kernels) seen = seen || n == name;
                if (!seen) kernels->push_back(name), bounds->push_back(bound);
            }
            continue;
        }
        // A __shared__ marker: extern ones are dynamic shared memory.
        size_t st = stmt_start(ii, sh);
        std::string before = ii.substr(st, sh - st);
        if (!has_word(before, "extern")) {
            size_t semi = ii.find(';', sh);
            if (semi == std::string::npos) {
                *err = "unterminated __shared__ declaration";
                return "";
            }
            out += ii.substr(i, sh - i) + "thread_local" + ii.substr(sh + S.size(), semi + 1 - sh - S.size());
            for (auto& n : declarator_names(ii.substr(sh + S.size(), semi - sh - S.size())))
                out += " int __pbemu_sn" + std::to_string(notes++) + " = ::pbemu::shared_note(&" + n + ", sizeof " + n + ");";
            i = semi + 1;
            continue;
        }
        size_t semi = ii.find(';', sh);
        if (semi == std::string::npos) {
            *err = "unterminated extern __shared__ declaration";
            return "";
        }
        // out already holds ii[i..st); drop the declaration's start from it.
        out += ii.substr(i, st - i);
        std::string decl = before + " " + ii.substr(sh + S.size(), semi - sh - S.size());
        size_t e = decl.find("extern");
        decl.erase(e, 6);
        decl = trim(strip_attributes(decl));
        size_t lb = decl.rfind('[');
        if (lb == std::string::npos || trim(decl.substr(lb)) != "[]") {
            *err = "extern __shared__ declaration without []: " + decl;
            return "";
        }
        decl = trim(decl.substr(0, lb));
        size_t a = decl.size();
        while (a > 0 && is_ident(decl[a - 1])) a--;
        std::string name = decl.substr(a), type = trim(decl.substr(0, a));
        if (name.empty() || type.empty()) {
            *err = "cannot read extern __shared__ declaration: " + decl;
            return "";
        }
        out += "static ::pbemu::DynShared<" + type + "> " + name;
        i = semi;
    }
    return out;
}

// Option parsing: what the real compilers accept that matters here.
struct Options {
    std::vector<std::string> pre; // -D, -U, -I for the preprocessor
    std::string std = "c++17";
    std::string arch; // sm_90, gfx90a:xnack-
    bool debug = false;
    int wave64 = -1; // HIP: -m(no-)wavefrontsize64
};

bool starts(const std::string& s, const char* p) { return s.compare(0, strlen(p), p) == 0; }

int parse_options(int n, const char* const* opts, Options* o, std::string* log) {
    for (int i = 0; i < n; i++) {
        std::string s = opts[i] ? opts[i] : "";
        auto value = [&](const char* longf, const char* shortf, std::string* v) {
            for (const char* f : {longf, shortf}) {
                if (!f) continue;
                std::string fe = std::string(f) + "=";
                if (starts(s, fe.c_str())) { *v = s.substr(fe.size()); return true; }
                if (s == f && i + 1 < n && opts[i + 1]) { *v = opts[++i]; return true; }
            }
            return false;
        };
        std::string v;
        if (starts(s, "-D") || starts(s, "-U") || starts(s, "-I")) {
            if (s.size() == 2 && i + 1 < n && opts[i + 1]) s += opts[++i];
            o->pre.push_back(s);
        } else if (value("--define-macro", nullptr, &v)) {
            o->pre.push_back("-D" + v);
        } else if (value("--undefine-macro", nullptr, &v)) {
            o->pre.push_back("-U" + v);
        } else if (value("--include-path", nullptr, &v)) {
            o->pre.push_back("-I" + v);
        } else if (value("--std", "-std", &v)) {
            if (v != "c++03" && v != "c++11" && v != "c++14" && v != "c++17" && v != "c++20" && v != "c++23") {
                *log += std::string(kPrefix) + ": error: invalid value for -std: " + v + "\n";
                return RTC_INVALID_OPTION;
            }
            o->std = (v == "c++20" || v == "c++23") ? v : "c++17"; // the emulation needs C++17
#ifdef PBEMU_HIP
        } else if (value("--offload-arch", nullptr, &v) || value("--gpu-architecture", "-arch", &v)) {
            o->arch = v;
        } else if (s == "-mwavefrontsize64") {
            o->wave64 = 1;
        } else if (s == "-mno-wavefrontsize64") {
            o->wave64 = 0;
        } else if (s == "-g") {
            o->debug = true;
        } else if (starts(s, "-O") || starts(s, "-W") || s == "-w" || starts(s, "-f") || s == "-mcumode" ||
                   s == "-mno-cumode" || s == "--save-temps") {
            // accepted; code generation is the host compiler's
#else
        } else if (value("--gpu-architecture", "-arch", &v)) {
            o->arch = v;
        } else if (s == "-G" || s == "--device-debug") {
            o->debug = true;
        } else if (starts(s, "--fmad=") || starts(s, "-fmad=") || s == "-lineinfo" || s == "--generate-line-info" ||
                   s == "--minimal" || s == "-default-device" || s == "--device-as-default-execution-space" ||
                   starts(s, "-dopt") || starts(s, "-O") || starts(s, "-rdc") || starts(s, "--relocatable-device-code") ||
                   s == "--use_fast_math" || s == "-use_fast_math" || s == "-w" || s == "--disable-warnings" ||
                   s == "-ewp" || s == "--extensible-whole-program" || starts(s, "--ftz") || starts(s, "-ftz") ||
                   starts(s, "--prec-div") || starts(s, "-prec-div") || starts(s, "--prec-sqrt") || starts(s, "-prec-sqrt") ||
                   s == "-restrict" || s == "--restrict" || s == "--extra-device-vectorization" || s == "-extra-device-vectorization") {
            // accepted; code generation is the host compiler's
#endif
        } else {
            *log += std::string(kPrefix) + ": error: unrecognized option " + s + "\n";
            return RTC_INVALID_OPTION;
        }
    }
    return RTC_SUCCESS;
}

// arch_macros checks the target and gives the vendor compiler's predefined
// macros for it; target is what the module records.
int arch_macros(const Options& o, std::vector<std::string>* defs, std::string* target, bool* virt, std::string* log) {
#ifdef PBEMU_HIP
    std::string arch = o.arch.empty() ? env_str("PLEXBENCH_EMU_ARCH") : o.arch;
    if (arch.empty()) arch = "gfx90a";
    std::string isa = arch.substr(0, arch.find(':'));
    bool ok = starts(isa, "gfx") && isa.size() >= 6 && isa.size() <= 7;
    for (size_t i = 3; ok && i < isa.size(); i++) ok = isxdigit((unsigned char)isa[i]);
    std::string fam = ok ? (isa.size() == 6 ? isa.substr(3, 1) : isa.substr(3, 2)) : "";
    if (!ok || (fam != "9" && fam != "10" && fam != "11" && fam != "12")) {
        *log += "hiprtc: error: unsupported offload target " + arch + "\n";
        return RTC_INVALID_OPTION;
    }
    int wave = fam == "9" ? 64 : (o.wave64 == 1 ? 64 : 32);
    defs->push_back("-D__HIPCC_RTC__=1");
    defs->push_back("-D__HIP_DEVICE_COMPILE__=1");
    defs->push_back("-D__HIP__=1");
    defs->push_back("-D__AMDGCN__=1");
    defs->push_back("-D__" + isa + "__=1");
    std::string up = "GFX" + fam;
    defs->push_back("-D__" + up + "__=1");
    defs->push_back("-D__AMDGCN_WAVEFRONT_SIZE=" + std::to_string(wave));
    defs->push_back("-DPBEMU_HIP=1");
    *target = arch;
    *virt = false;
#else
    std::string arch = o.arch.empty() ? "sm_75" : o.arch;
    bool v = starts(arch, "compute_");
    std::string num = arch.substr(arch.find('_') + 1);
    if (!num.empty() && num.back() == 'a') num.pop_back();
    bool ok = (starts(arch, "sm_") || v) && num.size() >= 2 && num.size() <= 3;
    for (char c : num) ok = ok && c >= '0' && c <= '9';
    if (!ok) {
        *log += "nvrtc: error: invalid value for --gpu-architecture (-arch): " + arch + "\n";
        return RTC_INVALID_OPTION;
    }
    defs->push_back("-D__CUDACC__=1");
    defs->push_back("-D__CUDACC_RTC__=1");
    defs->push_back("-D__CUDA_ARCH__=" + num + "0");
    defs->push_back("-D__CUDACC_VER_MAJOR__=13");
    defs->push_back("-D__CUDACC_VER_MINOR__=0");
    *target = "sm_" + arch.substr(arch.find('_') + 1);
    *virt = v;
#endif
    defs->push_back("-D__PLEXBENCH_EMU__=1");
    return RTC_SUCCESS;
}

std::string base_name(const std::string& p) {
    size_t i = p.rfind('/');
    return i == std::string::npos ? p : p.substr(i + 1);
}

int compile(Prog* p, int n, const char* const* opts) {
    const Config& cfg = config();
    p->log.clear();
    p->code.clear();
    p->compiled = false;
    Options o;
    int rc = parse_options(n, opts, &o, &p->log);
    if (rc) return rc;
    std::vector<std::string> defs;
    std::string target;
    rc = arch_macros(o, &defs, &target, &p->virtual_arch, &p->log);
    if (rc) return rc;
    if (cfg.fail_compile) {
        p->log = p->name + "(1): error: compilation failure injected by PLEXBENCH_EMU_FAIL_COMPILE\n1 error detected in the compilation of \"" +
                 p->name + "\".\n";
        return RTC_COMPILATION;
    }
    if (cfg.cxx.empty()) {
        p->log = std::string(kPrefix) + " (emulated): no host C++ compiler found (set PLEXBENCH_EMU_CXX)\n";
        return RTC_BUILTIN_OPERATION_FAILURE;
    }
    const char* tmp = getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/pbemu-rtc-XXXXXX";
    std::vector<char> tb(tmpl.begin(), tmpl.end());
    tb.push_back(0);
    if (!mkdtemp(tb.data())) {
        p->log = std::string(kPrefix) + " (emulated): cannot create a work directory in " + tmpl + ": " + strerror(errno) + "\n";
        return RTC_BUILTIN_OPERATION_FAILURE;
    }
    std::string dir = tb.data();
    struct Cleanup {
        std::string d;
        bool keep;
        ~Cleanup() { if (!keep) rmtree(d); }
    } cleanup{dir, cfg.keep};
    std::string srcname = base_name(p->name);
    if (srcname.empty() || srcname[0] == '.') srcname = "default_program";
    std::string src = dir + "/" + srcname, hdr = dir + "/pbemu_device.h";
    bool ok = write_file(src, p->src) && write_file(hdr, pbemu_device_h);
    for (auto& h : p->headers) {
        std::string hp = dir + "/" + h.first;
        if (h.first.find('/') != std::string::npos) mkdirs(hp.substr(0, hp.rfind('/')));
        ok = ok && write_file(hp, h.second);
    }
    if (!ok) {
        p->log = std::string(kPrefix) + " (emulated): cannot write to " + dir + "\n";
        return RTC_BUILTIN_OPERATION_FAILURE;
    }
    // Pass 1: preprocess.
    std::vector<std::string> a1 = {cfg.cxx, "-E", "-x", "c++", "-std=" + o.std, "-nostdinc", "-DPBEMU_SCAN"};
    a1.insert(a1.end(), defs.begin(), defs.end());
    a1.insert(a1.end(), o.pre.begin(), o.pre.end());
    a1.insert(a1.end(), {"-I", dir, "-include", hdr, src, "-o", dir + "/prog.ii"});
    std::string log;
    if (!run(a1, dir + "/pass1.log", &log)) {
        p->log = log;
        return RTC_COMPILATION;
    }
    std::string ii, err;
    read_file(dir + "/prog.ii", &ii);
    // The work directory's name is random: drop it from the line markers
    // (and __FILE__), so that the text, and the cache key, depend only on
    // the program.
    for (size_t at; (at = ii.find(dir + "/")) != std::string::npos;) ii.erase(at, dir.size() + 1);
    std::vector<std::string> kernels, bounds;
    std::string body = rewrite(ii, &kernels, &bounds, &err);
    if (!err.empty()) {
        p->log = p->name + ": error: " + err + "\n";
        return RTC_COMPILATION;
    }
    std::string mod = "#include \"pbemu_device.h\"\n" + body + "\n# 1 \"<pbemu entries>\"\n";
    for (size_t k = 0; k < kernels.size(); k++)
        mod += bounds[k].empty() ? "PBEMU_ENTRY(" + kernels[k] + ")\n" : "PBEMU_ENTRY_LB(" + kernels[k] + ", " + bounds[k] + ")\n";
    mod += "extern \"C\" PBEMU_EXPORT const char __pbemu_dialect[] = \"" + std::string(kDialect) + "\";\n";
    mod += "extern \"C\" PBEMU_EXPORT const char __pbemu_target[] = \"" + target + "\";\n";
    // Pass 2: the shared object.
    std::vector<std::string> a2 = {cfg.cxx, "-std=" + o.std, o.debug ? "-O0" : "-O2", "-fPIC", "-shared",
                                   "-fvisibility=hidden", "-ffp-contract=off", "-fno-fast-math", "-pthread", "-w"};
    if (o.debug) a2.push_back("-g");
    if (cfg.traffic) {
        // Every load calls a hook (pbemu_device.h): the sanitizer's
        // instrumentation with the hooks as its runtime, nothing else of it.
        bool clang = base_name(cfg.cxx).find("clang") != std::string::npos;
        a2.insert(a2.end(), {"-fsanitize=kernel-address", "-DPBEMU_TRAFFIC=1"});
        for (const char* prm : {"asan-stack=0", "asan-globals=0", "asan-instrumentation-with-call-threshold=0"}) {
            if (clang) a2.insert(a2.end(), {"-mllvm", std::string("-") + prm});
            else a2.insert(a2.end(), {"--param", prm});
        }
    }
#ifdef PBEMU_HIP
    a2.push_back("-DPBEMU_HIP=1");
#endif
    std::string key_text = "pbemu-rtc/1\n" + cfg.cxx_ident + "\n";
    for (auto& s : a2) key_text += s + "\n";
    key_text += pbemu_device_h; // the emulation itself: a changed header is a different module
    key_text += mod;
    std::string key = sha256_hex(key_text);
    std::string cached = cfg.cache_dir.empty() ? "" : cfg.cache_dir + "/" + key + ".so";
    if (!cached.empty() && read_file(cached, &p->code) && p->code.size() > 64 && p->code.compare(0, 4, "\x7f" "ELF") == 0) {
        p->log = log;
        p->compiled = true;
        return RTC_SUCCESS;
    }
    if (!write_file(dir + "/module.cpp", mod)) {
        p->log = std::string(kPrefix) + " (emulated): cannot write to " + dir + "\n";
        return RTC_BUILTIN_OPERATION_FAILURE;
    }
    a2.insert(a2.end(), {"-I", dir, dir + "/module.cpp", "-o", dir + "/module.so"});
    if (!run(a2, dir + "/pass2.log", &log)) {
        p->log = log;
        return RTC_COMPILATION;
    }
    if (!read_file(dir + "/module.so", &p->code) || p->code.empty()) {
        p->log = log + std::string(kPrefix) + " (emulated): no output from the host compiler\n";
        return RTC_BUILTIN_OPERATION_FAILURE;
    }
    p->log = log;
    p->compiled = true;
    if (!cached.empty()) {
        mkdirs(cfg.cache_dir);
        std::string t = cached + ".tmp" + std::to_string((long)getpid());
        if (write_file(t, p->code)) rename(t.c_str(), cached.c_str());
        else unlink(t.c_str());
    }
    return RTC_SUCCESS;
}

Prog* valid(void* p) {
    auto it = progs.find((Prog*)p);
    return it == progs.end() ? nullptr : *it;
}

} // namespace

API const char* RTC(GetErrorString)(int rc) {
    switch (rc) {
#ifdef PBEMU_HIP
    case 0: return "HIPRTC_SUCCESS";
    case 1: return "HIPRTC_ERROR_OUT_OF_MEMORY";
    case 2: return "HIPRTC_ERROR_PROGRAM_CREATION_FAILURE";
    case 3: return "HIPRTC_ERROR_INVALID_INPUT";
    case 4: return "HIPRTC_ERROR_INVALID_PROGRAM";
    case 5: return "HIPRTC_ERROR_INVALID_OPTION";
    case 6: return "HIPRTC_ERROR_COMPILATION";
    case 7: return "HIPRTC_ERROR_BUILTIN_OPERATION_FAILURE";
    case 11: return "HIPRTC_ERROR_INTERNAL_ERROR";
    }
    return "HIPRTC_ERROR_INTERNAL_ERROR";
#else
    case 0: return "NVRTC_SUCCESS";
    case 1: return "NVRTC_ERROR_OUT_OF_MEMORY";
    case 2: return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
    case 3: return "NVRTC_ERROR_INVALID_INPUT";
    case 4: return "NVRTC_ERROR_INVALID_PROGRAM";
    case 5: return "NVRTC_ERROR_INVALID_OPTION";
    case 6: return "NVRTC_ERROR_COMPILATION";
    case 7: return "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE";
    case 11: return "NVRTC_ERROR_INTERNAL_ERROR";
    }
    return "NVRTC_ERROR unknown";
#endif
}

// pbemu_rtc_ident says what of the emulated compiler's configuration
// changes its code (the traffic hooks): plexbench's kernel cache keys on it.
API const char* pbemu_rtc_ident() { return config().traffic ? "pbemu traffic" : "pbemu"; }

API int RTC(Version)(int* major, int* minor) {
    if (!major || !minor) return RTC_INVALID_INPUT;
#ifdef PBEMU_HIP
    *major = 6, *minor = 4;
#else
    *major = 13, *minor = 0;
#endif
    return RTC_SUCCESS;
}

API int RTC(CreateProgram)(void** prog, const char* src, const char* name, int numHeaders, const char* const* headers,
                           const char* const* includeNames) {
    if (!prog || !src || numHeaders < 0 || (numHeaders > 0 && (!headers || !includeNames))) return RTC_INVALID_INPUT;
    Prog* p = new Prog;
    p->src = src;
    p->name = name && *name ? name : "default_program";
    for (int i = 0; i < numHeaders; i++) {
        if (!headers[i] || !includeNames[i]) {
            delete p;
            return RTC_INVALID_INPUT;
        }
        p->headers.push_back({includeNames[i], headers[i]});
    }
    std::lock_guard<std::mutex> g(mu);
    progs.insert(p);
    *prog = p;
    return RTC_SUCCESS;
}

API int RTC(DestroyProgram)(void** prog) {
    if (!prog) return RTC_INVALID_PROGRAM;
    std::lock_guard<std::mutex> g(mu);
    Prog* p = valid(*prog);
    if (!p) return RTC_INVALID_PROGRAM;
    progs.erase(p);
    delete p;
    *prog = nullptr;
    return RTC_SUCCESS;
}

API int RTC(CompileProgram)(void* prog, int n, const char* const* opts) {
    Prog* p;
    {
        std::lock_guard<std::mutex> g(mu);
        p = valid(prog);
    }
    if (!p) return RTC_INVALID_PROGRAM;
    if (n < 0 || (n > 0 && !opts)) return RTC_INVALID_INPUT;
    return compile(p, n, opts);
}

API int RTC(GetProgramLogSize)(void* prog, size_t* n) {
    std::lock_guard<std::mutex> g(mu);
    Prog* p = valid(prog);
    if (!p) return RTC_INVALID_PROGRAM;
    if (!n) return RTC_INVALID_INPUT;
    *n = p->log.size() + 1;
    return RTC_SUCCESS;
}

API int RTC(GetProgramLog)(void* prog, char* buf) {
    std::lock_guard<std::mutex> g(mu);
    Prog* p = valid(prog);
    if (!p) return RTC_INVALID_PROGRAM;
    if (!buf) return RTC_INVALID_INPUT;
    memcpy(buf, p->log.c_str(), p->log.size() + 1);
    return RTC_SUCCESS;
}

#ifdef PBEMU_HIP
#define CODE_SIZE_FN hiprtcGetCodeSize
#define CODE_FN hiprtcGetCode
#else
#define CODE_SIZE_FN nvrtcGetCUBINSize
#define CODE_FN nvrtcGetCUBIN
#endif

API int CODE_SIZE_FN(void* prog, size_t* n) {
    std::lock_guard<std::mutex> g(mu);
    Prog* p = valid(prog);
    if (!p) return RTC_INVALID_PROGRAM;
    if (!n) return RTC_INVALID_INPUT;
    if (!p->compiled) return RTC_INVALID_PROGRAM;
    *n = p->virtual_arch ? 0 : p->code.size(); // a virtual arch (compute_XX) has no cubin
    return RTC_SUCCESS;
}

API int CODE_FN(void* prog, char* buf) {
    std::lock_guard<std::mutex> g(mu);
    Prog* p = valid(prog);
    if (!p) return RTC_INVALID_PROGRAM;
    if (!buf) return RTC_INVALID_INPUT;
    if (!p->compiled || p->virtual_arch) return RTC_INVALID_PROGRAM;
    memcpy(buf, p->code.data(), p->code.size());
    return RTC_SUCCESS;
}
