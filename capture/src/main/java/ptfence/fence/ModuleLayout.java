package ptfence.fence;

import ptfence.bpf.Btf;
import ptfence.cli.BadInputException;

import java.util.Optional;
import java.util.OptionalInt;

/**
 * Where a kernel module's text lies in {@code struct module}, from the running kernel's BTF: since 6.4 in
 * {@code mem[MOD_TEXT]} and {@code mem[MOD_INIT_TEXT]} ({@code struct module_memory {base, size}}), before it in
 * {@code core_layout} and {@code init_layout} ({@code struct module_layout {base, size, text_size}}), text first.
 * Also the list the kernel frees init text from ({@code struct mod_initfree}), where BTF has it.
 *
 * @param name          offset of {@code module.name} (char[])
 * @param coreBase      offset of the core text's base pointer in struct module
 * @param coreSize      offset of its (u32) size
 * @param initBase      the same for init text
 * @param initSize      its size
 * @param initfreeText  offset of the init text pointer in {@code struct mod_initfree} (after its llist_node)
 * @param workFunc      offset of {@code work_struct.func}
 * @param symbols       where the module's core symbol table lies, absent without CONFIG_KALLSYMS
 */
public record ModuleLayout(int name, int coreBase, int coreSize, int initBase, int initSize,
                           OptionalInt initfreeText, int workFunc, Optional<SymbolTable> symbols) {
    /**
     * {@code module.core_kallsyms} (struct mod_kallsyms): the symbols /proc/kallsyms shows for the module once its
     * init is done, filled in before {@code module_load} fires. The kernel lays the three tables out back to back in
     * the module's data (layout_symtab: symtab of num_symtab Elf64_Sym, then strtab, then typetab of num_symtab
     * chars, "add_kallsyms() computes strtab_size as core_typeoffs - stroffs"), so one copy takes all three.
     *
     * @param symtab    offset of the Elf_Sym pointer
     * @param numSymtab offset of its (unsigned int) count
     * @param strtab    offset of the string table pointer
     * @param typetab   offset of the type char table pointer
     */
    public record SymbolTable(int symtab, int numSymtab, int strtab, int typetab) {
        static Optional<SymbolTable> from(Btf btf) {
            String k = "core_kallsyms.";
            if (!hasMember(btf, "module", k + "typetab")) return Optional.empty();
            return Optional.of(new SymbolTable(btf.offsetOf("module", k + "symtab"),
                    btf.offsetOf("module", k + "num_symtab"), btf.offsetOf("module", k + "strtab"),
                    btf.offsetOf("module", k + "typetab")));
        }
    }

    /** The size of {@code module.name}: MODULE_NAME_LEN (64 - sizeof(long)). */
    public static final int NAME_LEN = 56;
    /** enum mod_mem_type (6.4+): MOD_TEXT, MOD_DATA, MOD_RODATA, MOD_RO_AFTER_INIT, MOD_INIT_TEXT, ... */
    private static final int MOD_TEXT = 0, MOD_INIT_TEXT = 4;

    public static ModuleLayout from(Btf btf) {
        int name = btf.offsetOf("module", "name");
        OptionalInt initfree = initfree(btf);
        int work = btf.offsetOf("work_struct", "func");
        if (hasMember(btf, "module", "mem")) {
            int mem = btf.offsetOf("module", "mem"), each = btf.structSize("module_memory");
            int base = btf.offsetOf("module_memory", "base"), size = btf.offsetOf("module_memory", "size");
            return new ModuleLayout(name, mem + MOD_TEXT * each + base, mem + MOD_TEXT * each + size,
                    mem + MOD_INIT_TEXT * each + base, mem + MOD_INIT_TEXT * each + size, initfree, work,
                    SymbolTable.from(btf));
        }
        // before 6.4: text comes first in each layout; text_size is its page-aligned end
        return new ModuleLayout(name, btf.offsetOf("module", "core_layout.base"),
                btf.offsetOf("module", "core_layout.text_size"), btf.offsetOf("module", "init_layout.base"),
                btf.offsetOf("module", "init_layout.text_size"), initfree, work, SymbolTable.from(btf));
    }

    private static OptionalInt initfree(Btf btf) {
        for (String field : new String[] {"init_text", "module_init"}) {
            if (hasMember(btf, "mod_initfree", field)) return OptionalInt.of(btf.offsetOf("mod_initfree", field));
        }
        return OptionalInt.empty();
    }

    private static boolean hasMember(Btf btf, String struct, String member) {
        try {
            btf.offsetOf(struct, member);
            return true;
        } catch (BadInputException e) {
            return false;
        }
    }
}
