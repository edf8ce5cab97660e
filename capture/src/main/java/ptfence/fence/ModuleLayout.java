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
 * @param symbols       where the module's symbol tables lie, absent without CONFIG_KALLSYMS
 */
public record ModuleLayout(int name, int coreBase, int coreSize, int initBase, int initSize,
                           OptionalInt initfreeText, int workFunc, Optional<SymbolTable> symbols) {
    /**
     * A module's symbol tables (struct mod_kallsyms: symtab, num_symtab, strtab, typetab). Two of them:
     * <ul>
     * <li>{@code module.core_kallsyms}: the symbols /proc/kallsyms shows once init is done, filled in (add_kallsyms)
     *     before {@code module_load} fires. layout_symtab puts the three tables back to back in the module's core
     *     data: symtab of num_symtab Elf64_Sym, strtab, typetab of num_symtab chars.</li>
     * <li>{@code *module.kallsyms}: the table kallsyms reads. From add_kallsyms until do_init_module switches it to
     *     core_kallsyms after init, the full one (every ELF symbol, init ones too) in the init data: the ELF symtab
     *     section, the strtab section right after it (its alignment is 1), then (aligned) that struct mod_kallsyms
     *     itself and the full typetab. So at {@code module_load} one copy from symtab to typetab's end holds all three
     *     too, with the struct between strtab and typetab, where no name reaches.</li>
     * </ul>
     *
     * @param core      offset of {@code module.core_kallsyms}
     * @param current   offset of the {@code module.kallsyms} pointer
     * @param symtab    offset of the Elf_Sym pointer in struct mod_kallsyms
     * @param numSymtab offset of its (unsigned int) count
     * @param strtab    offset of the string table pointer
     * @param typetab   offset of the type char table pointer
     */
    public record SymbolTable(int core, int current, int symtab, int numSymtab, int strtab, int typetab) {
        static Optional<SymbolTable> from(Btf btf) {
            if (!hasMember(btf, "module", "core_kallsyms.typetab") || !hasMember(btf, "module", "kallsyms")) {
                return Optional.empty();
            }
            String k = "mod_kallsyms";
            return Optional.of(new SymbolTable(btf.offsetOf("module", "core_kallsyms"),
                    btf.offsetOf("module", "kallsyms"), btf.offsetOf(k, "symtab"), btf.offsetOf(k, "num_symtab"),
                    btf.offsetOf(k, "strtab"), btf.offsetOf(k, "typetab")));
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
