/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include "util/list.h"

typedef struct Item {
        List link;
        int v;
} Item;

static void test_order(void) {
        List head = LIST_INIT(head), *pos, *tmp;
        Item items[4];
        int i, expect = 0;

        for (i = 0; i < 4; ++i) {
                items[i].v = i;
                list_init(&items[i].link);
                list_append(&head, &items[i].link);
        }
        list_for_each(pos, &head)
                g_assert_cmpint(list_entry(pos, Item, link)->v, ==, expect++);
        g_assert_cmpint(expect, ==, 4);

        list_unlink(&items[1].link);
        list_unlink(&items[1].link);            /* idempotent */
        g_assert_false(list_is_linked(&items[1].link));
        list_for_each_safe(pos, tmp, &head)
                list_unlink(pos);
        g_assert_true(list_is_empty(&head));
        g_assert_null(list_first(&head));
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/util/list/order", test_order);
        return g_test_run();
}
