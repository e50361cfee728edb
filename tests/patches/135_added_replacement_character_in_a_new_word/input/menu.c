/* café menu */
#include <stdio.h>

int main(void) {
    puts("café");
    puts("crème brûlée");
    return 0;
}
